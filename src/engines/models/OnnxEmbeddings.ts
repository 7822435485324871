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
 * normalised; the dimension is the model's, read from a probe at load time. Texts longer than
 * the model takes are cut as sentence-transformers cuts them (the closing `[SEP]` is kept), and
 * float16 outputs (`model_fp16.onnx`) are read as numbers. The layer reports the model id
 * (`modelId`, default the folder name or the hub id) and the dimension.
 *
 * An optional part (`effect-rag/onnx`): `@huggingface/transformers` is an optional peer
 * dependency; without it, `make` fails with `RagError.MissingPackage` naming the install line.
 * `onnxruntime-node`'s install script downloads CUDA libraries on linux/x64 from outside the npm
 * registry; where only the registry is reachable, install with `ONNXRUNTIME_NODE_INSTALL=skip`
 * (or `onnxruntime-node-install=skip` in `.npmrc`). The CPU runtime needs nothing more.
 *
 * @since 0.1.0
 */
import { Config, Effect, Layer } from "effect"
import type { ConfigError } from "effect/ConfigError"
import { basename } from "node:path"
import * as Embeddings from "../../api/Embeddings.js"
import * as Optional from "../../internal/optional.js"
import * as RagError from "../../RagError.js"
import { engineError, LocalModelError, makeLocalService } from "./internal/embed-common.js"
import {
  defaultCacheDir,
  encodeWithin,
  floats,
  loadWith,
  locate,
  type ModelSource,
  type OutputTensor,
  type TextTokenizer,
  toBatch,
  type Transformers
} from "./internal/embed-onnx.js"

export { LocalModelError } from "./internal/embed-common.js"
export type { ModelSource } from "./internal/embed-onnx.js"

/**
 * Options of the layer.
 *
 * @since 0.1.0
 * @category models
 */
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

// the parts of a transformers.js feature-extraction pipeline used here
interface Extractor {
  readonly tokenizer: TextTokenizer
  readonly model: (inputs: Record<string, unknown>) => Promise<Record<string, OutputTensor | undefined>>
}

/**
 * Pools a model output into one vector per row: a [batch, seq, hidden] output by the mean over
 * the tokens of the attention mask, or by its first token (`cls`); a [batch, hidden] output is
 * taken as already pooled.
 */
const pool = (
  output: OutputTensor,
  mask: Uint8Array,
  length: number,
  pooling: "mean" | "cls"
): Array<Float32Array> => {
  const data = floats(output)
  const [batch, second, third] = output.dims
  if (output.dims.length === 2) {
    return Array.from({ length: batch! }, (_, b) => Float32Array.from({ length: second! }, (_, k) => data[b * second! + k]!))
  }
  if (output.dims.length !== 3 || second !== length) {
    throw new Error(`unexpected output shape [${output.dims.join(", ")}] for ${batch} inputs of ${length} tokens`)
  }
  const hidden = third!
  return Array.from({ length: batch! }, (_, b) => {
    const v = new Float32Array(hidden)
    const row = b * length
    if (pooling === "cls") {
      // the first real token (padding may come first when the tokenizer pads on the left)
      let first = 0
      while (first < length - 1 && mask[row + first] === 0) first++
      for (let k = 0; k < hidden; k++) v[k] = data[(row + first) * hidden + k]!
      return v
    }
    const sum = new Float64Array(hidden)
    let count = 0
    for (let i = 0; i < length; i++) {
      if (mask[row + i] === 0) continue
      count++
      for (let k = 0; k < hidden; k++) sum[k] = sum[k]! + data[(row + i) * hidden + k]!
    }
    for (let k = 0; k < hidden; k++) v[k] = sum[k]! / Math.max(1, count)
    return v
  })
}

/**
 * Finds and loads the model, then builds the service. Fails with {@link LocalModelError}:
 * `not_found` (nothing at the places checked, downloads off) or `load_failed`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<Embeddings.Service, LocalModelError | RagError.MissingPackage> =>
  Effect.gen(function*() {
    yield* Optional.ensure("onnx")
    const located = yield* locate(options, "embedding")
    const { extractor, t } = yield* loadWith(located, options, async (t: Transformers, pretrained) => ({
      t,
      extractor: (await t.pipeline("feature-extraction", located.path, pretrained)) as unknown as Extractor
    }))
    const pooling = options.pooling ?? "mean"
    const endpoint = "OnnxEmbeddings"
    const model = options.modelId ?? (located.remote ? located.path : basename(located.path))
    const run = (texts: ReadonlyArray<string>) =>
      Effect.tryPromise({
        try: async () => {
          const batch = toBatch(t, extractor.tokenizer, texts.map((text) => encodeWithin(extractor.tokenizer, text)))
          const out = await extractor.model(batch.inputs)
          const hidden = out["last_hidden_state"] ?? out["logits"] ?? out["token_embeddings"] ?? out["sentence_embedding"]
          if (hidden === undefined) {
            throw new Error(
              `the model has no last_hidden_state, logits, token_embeddings or sentence_embedding output (it has ${Object.keys(out).join(", ")})`
            )
          }
          return { vectors: pool(hidden, batch.mask, batch.length, pooling), tokens: batch.tokens }
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

/**
 * The layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<Embeddings.Embeddings, LocalModelError | RagError.MissingPackage> =>
  Layer.effect(Embeddings.Embeddings, make(options))

/**
 * The layer from configuration: `EFFECT_RAG_ONNX_MODEL` (folder or hub id),
 * `EFFECT_RAG_ALLOW_DOWNLOADS` (default false), `EFFECT_RAG_MODEL_CACHE` (default
 * `.effect-rag/models`), `EFFECT_RAG_ONNX_POOLING` (`mean` or `cls`, default `mean`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Embeddings.Embeddings, LocalModelError | RagError.MissingPackage | ConfigError> = Layer.unwrapEffect(
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
