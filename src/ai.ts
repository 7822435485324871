/**
 * `effect-rag/ai`: the API's chat and embeddings as `@effect/ai` `LanguageModel` and
 * `EmbeddingModel` services.
 *
 * An optional part: it needs the optional peer dependency `@effect/ai`
 * (`npm install @effect/ai@^0.37.0`), which the application shares with this package.
 *
 * @since 0.1.0
 */
export * as RagEmbeddingModel from "./ai/RagEmbeddingModel.js"
export * as RagLanguageModel from "./ai/RagLanguageModel.js"
