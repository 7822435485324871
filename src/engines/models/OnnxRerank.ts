/**
 * A local {@link Rerank.Rerank} layer: a cross-encoder (a sequence-classification model that
 * scores a query and a document together, such as the MS MARCO MiniLM cross-encoders or BGE
 * rerankers exported to ONNX) run by transformers.js. Same model rules as
 * {@link OnnxEmbeddings}: a local folder, or a hub id only when downloads are allowed (off by
 * default); otherwise a {@link LocalModelError} that says where it looked and how to provide
 * one. No model ships with effect-rag.
 *
 * Scores: the sigmoid of the single logit (one-label models) or the softmax probability of the
 * last label (two-label models); results are sorted by score and cut to `top_n`. A pair longer
 * than the model takes is cut as the Hugging Face tokenizers cut it (longer side first, both
 * separators kept), so a long query never pushes the document out; float16 logits
 * (`model_fp16.onnx`) are read as numbers.
 *
 * @since 0.1.0
 */
import { Config, Effect, Layer } from "effect"
import type { ConfigError } from "effect/ConfigError"
import { basename } from "node:path"
import * as Rerank from "../../api/Rerank.js"
import * as RagError from "../../RagError.js"
import * as Optional from "../../internal/optional.js"
import { engineError, LocalModelError } from "./internal/embed-common.js"
import {
  defaultCacheDir,
  encodeWithin,
  floats,
  loadWith,
  locate,
  type ModelSource,
  type OutputTensor,
  type TextTokenizer,
  toBatch
} from "./internal/embed-onnx.js"

export { LocalModelError } from "./internal/embed-common.js"

/**
 * Options of the layer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends ModelSource {
  /** The id the layer reports (default: folder name or hub id). */
  readonly modelId?: string | undefined
  /** Query-document pairs per forward pass (default 16). */
  readonly batchSize?: number | undefined
}

interface Classifier {
  (inputs: Record<string, unknown>): Promise<{ logits: OutputTensor }>
}

/**
 * Turns a row of logits into a relevance score in [0, 1].
 *
 * @since 0.1.0
 * @category utils
 */
export const scoreOf = (logits: ArrayLike<number>): number => {
  if (logits.length === 1) return 1 / (1 + Math.exp(-logits[0]!))
  let max = -Infinity
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!)
  let z = 0
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i]! - max)
  return Math.exp(logits[logits.length - 1]! - max) / z
}

/**
 * Finds and loads the cross-encoder, then builds the service.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<Rerank.Service, LocalModelError | RagError.MissingPackage> =>
  Effect.gen(function*() {
    yield* Optional.ensure("onnx")
    const located = yield* locate(options, "reranking")
    const { classifier, t, tokenizer } = yield* loadWith(located, options, async (t, pretrained) => ({
      t,
      tokenizer: (await t.AutoTokenizer.from_pretrained(located.path, pretrained)) as unknown as TextTokenizer,
      classifier: (await t.AutoModelForSequenceClassification.from_pretrained(located.path, pretrained)) as unknown as Classifier
    }))
    const model = options.modelId ?? (located.remote ? located.path : basename(located.path))
    const endpoint = "OnnxRerank"
    const batchSize = Math.max(1, options.batchSize ?? 16)
    const lock = yield* Effect.makeSemaphore(1)

    const scoreBatch = (query: string, documents: ReadonlyArray<string>) =>
      Effect.tryPromise({
        try: async () => {
          const batch = toBatch(t, tokenizer, documents.map((document) => encodeWithin(tokenizer, query, document)))
          const { logits } = await classifier(batch.inputs)
          const data = floats(logits)
          const labels = logits.dims[logits.dims.length - 1]!
          const scores = documents.map((_, i) => scoreOf(Array.from({ length: labels }, (_, k) => data[i * labels + k]!)))
          return { scores, tokens: batch.tokens }
        },
        catch: engineError(endpoint)
      })

    const rerank = (request: Rerank.RerankRequest) =>
      Effect.gen(function*() {
        if (request.model !== model && request.model !== "") {
          return yield* new RagError.BadRequest({ endpoint, message: `${endpoint} serves the model ${model} only, not ${request.model}` })
        }
        const scores: Array<number> = []
        let tokens = 0
        for (let i = 0; i < request.documents.length; i += batchSize) {
          const r = yield* lock.withPermits(1)(scoreBatch(request.query, request.documents.slice(i, i + batchSize)))
          scores.push(...r.scores)
          tokens += r.tokens
        }
        const response: Rerank.RerankResponse = {
          model,
          results: scores.map((relevance_score, index) => ({
            index,
            relevance_score,
            ...(request.return_documents === true ? { document: { text: request.documents[index]! } } : {})
          })),
          usage: { total_tokens: tokens }
        }
        return yield* Rerank.normalize(request, response)
      }).pipe(Effect.withSpan("OnnxRerank.rerank", { attributes: { documents: request.documents.length } }))

    return Rerank.Rerank.of({ defaultModel: model, rerank })
  })

/**
 * The layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<Rerank.Rerank, LocalModelError | RagError.MissingPackage> =>
  Layer.effect(Rerank.Rerank, make(options))

/**
 * The layer from configuration: `EFFECT_RAG_RERANK_MODEL` (folder or hub id),
 * `EFFECT_RAG_ALLOW_DOWNLOADS` (default false), `EFFECT_RAG_MODEL_CACHE` (default
 * `.effect-rag/models`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Rerank.Rerank, LocalModelError | RagError.MissingPackage | ConfigError> = Layer.unwrapEffect(
  Effect.map(
    Config.all({
      model: Config.string("EFFECT_RAG_RERANK_MODEL"),
      allowDownloads: Config.boolean("EFFECT_RAG_ALLOW_DOWNLOADS").pipe(Config.withDefault(false)),
      cacheDir: Config.string("EFFECT_RAG_MODEL_CACHE").pipe(Config.withDefault(defaultCacheDir))
    }),
    layer
  )
)
