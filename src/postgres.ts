/**
 * `effect-rag/postgres`: the PostgreSQL + pgvector store (`PostgresStore`), a `VectorStore`
 * adapter on node-postgres.
 *
 * An optional part: it needs the optional peer dependency `pg` (`npm install pg@^8.23.1`).
 * Without it, the store's layer fails with `RagError.MissingPackage`, whose message is that
 * install line.
 *
 * @since 0.1.0
 */
export * as PostgresStore from "./store/PostgresStore.js"
