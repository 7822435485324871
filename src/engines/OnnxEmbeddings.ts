/**
 * A local {@link Embeddings.Embeddings} layer on transformers.js (`@huggingface/transformers`,
 * ONNX Runtime for Node, whose CPU binary ships inside the `onnxruntime-node` npm package): a
 * sentence-embedding model from a local folder, or from the hub only when the user allows
 * downloads (off by default).
 *
 * Where the model is looked for, and the {@link LocalModelError} raised when it is not there
 * (it names every place checked and how to provide a model), are described in
 * `internal/embed-onnx.ts`. No model ships with effect-rag.
 *
 * Vectors are pooled (`mean` by default, `cls` for models trained that way, such as BGE) and
 * normalised; the dimension is the model's, read from a probe at load time. The layer reports
 * the model id (`modelId`, default the folder name or the hub id) and the dimension.
 *
 * Install note: `onnxruntime-node`'s install script tries to download CUDA libraries on Linux
 * x64 and fails offline; install with `onnxruntime-node-install=skip` in `.npmrc` (or
 * `ONNXRUNTIME_NODE_INSTALL=skip` in the environment). The CPU runtime needs nothing more.
 *
 * @since 0.1.0
 */
import { Config, Effect, Layer } from "effect"
import type { ConfigError } from "effect/ConfigError"
import { basename } from "node:path"
import * as Embeddings from "../api/Embeddings.js"
import { engineError, LocalModelError, makeLocalService } from "./internal/embed-common.js"
import { defaultCacheDir, loadWith, locate, type ModelSource } from "./internal/embed-onnx.js"

export { LocalModelError } from "./internal/embed-common.js"
export type { ModelSource } from "./internal/embed-onnx.js"

/** Options of the layer. */
export interface Options extends ModelSource {
  /** The id the layer reports and collections record (default: folder name or hub id). */
  readonly modelId?: string | undefined
  /** How token vectors become one vector (default `mean`). */
  readonly pooling?: "mean" | "cls" | undefined
  /** Inputs per forward pass (default 32). */
  readonly batchSize?: number | undefined
  /** Forward passes in flight (default 1; ONNX Runtime already uses several threads per pass). */
  readonly concurrency?: number | undefined
}

interface Extractor {
  (texts: Array<string>, options: { pooling: string; normalize: boolean }): Promise<{ dims: Array<number>; data: Float32Array }>
  readonly tokenizer: (texts: Array<string>, options: { padding: boolean; truncation: boolean }) => { attention_mask: { data: ArrayLike<number | bigint> } }
}

/**
 * Finds and loads the model, then builds the service. Fails with {@link LocalModelError}:
 * `not_found` (nothing at the places checked, downloads off) or `load_failed`.
 */
export const make = (options: Options): Effect.Effect<Embeddings.Service, LocalModelError> =>
  Effect.gen(function*() {
    const located = yield* locate(options, "embedding")
    const extractor = yield* loadWith(
      located,
      options,
      (t, pretrained) => t.pipeline("feature-extraction", located.path, pretrained) as unknown as Promise<Extractor>
    )
    const pooling = options.pooling ?? "mean"
    const endpoint = "OnnxEmbeddings"
    const model = options.modelId ?? (located.remote ? located.path : basename(located.path))
    const run = (texts: ReadonlyArray<string>) =>
      Effect.tryPromise({
        try: async () => {
          const out = await extractor([...texts], { pooling, normalize: true })
          const dim = out.dims[out.dims.length - 1]!
          const vectors = texts.map((_, i) => out.data.slice(i * dim, (i + 1) * dim))
          const mask = extractor.tokenizer([...texts], { padding: true, truncation: true }).attention_mask.data
          let tokens = 0
          for (let i = 0; i < mask.length; i++) tokens += Number(mask[i])
          return { vectors, tokens }
        },
        catch: engineError(endpoint)
      })
    const probe = yield* run(["dimension probe"]).pipe(
      Effect.mapError((e) =>
        new LocalModelError({
          model: options.model,
          reason: "load_failed",
          looked: [located.where],
          message: `the model at ${located.where} loaded but does not embed: ${e.message}`
        })
      )
    )
    return yield* makeLocalService({
      model,
      dimension: probe.vectors[0]!.length,
      endpoint,
      batchSize: options.batchSize ?? 32,
      concurrency: options.concurrency ?? 1,
      embedBatch: run
    })
  })

/** The layer. */
export const layer = (options: Options): Layer.Layer<Embeddings.Embeddings, LocalModelError> =>
  Layer.effect(Embeddings.Embeddings, make(options))

/**
 * The layer from configuration: `EFFECT_RAG_ONNX_MODEL` (folder or hub id),
 * `EFFECT_RAG_ALLOW_DOWNLOADS` (default false), `EFFECT_RAG_MODEL_CACHE` (default
 * `.effect-rag/models`), `EFFECT_RAG_ONNX_POOLING` (`mean` or `cls`, default `mean`).
 */
export const layerConfig: Layer.Layer<Embeddings.Embeddings, LocalModelError | ConfigError> = Layer.unwrapEffect(
  Effect.map(
    Config.all({
      model: Config.string("EFFECT_RAG_ONNX_MODEL"),
      allowDownloads: Config.boolean("EFFECT_RAG_ALLOW_DOWNLOADS").pipe(Config.withDefault(false)),
      cacheDir: Config.string("EFFECT_RAG_MODEL_CACHE").pipe(Config.withDefault(defaultCacheDir)),
      pooling: Config.literal("mean", "cls")("EFFECT_RAG_ONNX_POOLING").pipe(Config.withDefault("mean" as const))
    }),
    layer
  )
)
