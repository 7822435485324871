/**
 * `effect-rag/testing`: the `VectorStore` contract suite, for adapters written outside this
 * package. It needs `vitest` and `@effect/vitest` (optional peer dependencies).
 *
 * @since 0.1.0
 */
export * as VectorStoreContract from "./store/VectorStoreContract.js"
