/**
 * `effect-rag/onnx`: ONNX embedding and rerank models in-process, through transformers.js.
 *
 * An optional part: it needs the optional peer dependency `@huggingface/transformers`
 * (`npm install @huggingface/transformers@^4.3.1`). Without it, `make` and the layers fail with
 * `RagError.MissingPackage`, whose message is that install line.
 *
 * @since 0.1.0
 */
export * as OnnxEmbeddings from "./engines/models/OnnxEmbeddings.js"
export * as OnnxRerank from "./engines/models/OnnxRerank.js"
