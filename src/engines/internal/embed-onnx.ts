/**
 * Finding and loading a transformers.js (ONNX) model for the local embedding and rerank layers.
 *
 * A model is a folder in the Hugging Face layout exported to ONNX: `config.json`,
 * `tokenizer.json`, `tokenizer_config.json` and the weights as `onnx/model.onnx` (or
 * `model.onnx` at the top, or a quantised variant such as `onnx/model_quantized.onnx`).
 *
 * Where a layer looks, in order:
 * 1. `model` as a folder (absolute, or relative to the working directory);
 * 2. when `model` is a hub id (`owner/name`): `<cacheDir>/<owner>/<name>`, the folder that an
 *    earlier allowed download left there;
 * 3. the hub itself, only when `allowDownloads` is true (it is off by default). Otherwise the
 *    layer fails with a {@link LocalModelError} that lists the places above and how to provide
 *    the model; nothing is fetched.
 *
 * transformers.js is configured with `env.allowRemoteModels = false` except while an allowed
 * download runs.
 */
import { Effect } from "effect"
import { existsSync, readFileSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import { LocalModelError } from "./embed-common.js"

/** Where a model comes from. */
export interface ModelSource {
  /** A model folder, or a hub id such as `Xenova/all-MiniLM-L6-v2`. */
  readonly model: string
  /** Allow downloading a hub id that is not in `cacheDir` (default false). */
  readonly allowDownloads?: boolean | undefined
  /** Where downloaded models are kept (default `.effect-rag/models`). */
  readonly cacheDir?: string | undefined
}

/** The default folder of downloaded models. */
export const defaultCacheDir = ".effect-rag/models"

/** A model found on disk (or allowed to come from the hub). */
export interface Located {
  /** What to hand to transformers.js: an absolute folder, or the hub id. */
  readonly path: string
  /** Whether loading may download. */
  readonly remote: boolean
  /** The weights' subfolder (`onnx` or `` for weights at the top). */
  readonly subfolder: string
  /** The transformers.js dtype matching the weights file found (`fp32`, `q8`, ...). */
  readonly dtype: string
  /** `config.json`, when read. */
  readonly config: Readonly<Record<string, unknown>> | undefined
  /** The folder's absolute path, or the hub id. */
  readonly where: string
}

// file suffix -> transformers.js dtype, in order of preference
const weightVariants: ReadonlyArray<readonly [string, string]> = [
  ["", "fp32"],
  ["_quantized", "q8"],
  ["_int8", "int8"],
  ["_uint8", "uint8"],
  ["_fp16", "fp16"],
  ["_q4", "q4"],
  ["_q4f16", "q4f16"]
]

const requiredFiles = ["config.json", "tokenizer.json", "tokenizer_config.json"]

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory()

const hubId = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/

/** Checks a folder; returns what is missing, or the weights found. */
const inspect = (folder: string):
  | { readonly ok: true; readonly subfolder: string; readonly dtype: string }
  | { readonly ok: false; readonly missing: ReadonlyArray<string> } =>
{
  const missing = requiredFiles.filter((f) => !existsSync(join(folder, f))).map((f) => join(folder, f))
  for (const subfolder of ["onnx", ""]) {
    for (const [suffix, dtype] of weightVariants) {
      if (existsSync(join(folder, subfolder, `model${suffix}.onnx`))) {
        return missing.length === 0 ? { ok: true, subfolder, dtype } : { ok: false, missing }
      }
    }
  }
  return { ok: false, missing: [...missing, `${join(folder, "onnx", "model.onnx")} (or model.onnx, model_quantized.onnx, ...)`] }
}

const readConfig = (folder: string): Record<string, unknown> | undefined => {
  try {
    return JSON.parse(readFileSync(join(folder, "config.json"), "utf8")) as Record<string, unknown>
  } catch {
    return undefined
  }
}

const howTo = (kind: string) =>
  `Provide ${kind === "embedding" ? "an embedding" : "a reranking"} model folder exported to ONNX (config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx), ` +
  "for instance one of the transformers.js-ready repositories on the Hugging Face hub copied to disk, or an export made with " +
  "Optimum (`optimum-cli export onnx --model NAME DIR`); pass its path as `model` (EFFECT_RAG_ONNX_MODEL / EFFECT_RAG_RERANK_MODEL, " +
  "or `--embedder onnx:DIR`), or allow downloads of a hub id explicitly (allowDownloads: true, EFFECT_RAG_ALLOW_DOWNLOADS=true)."

/** Finds the model; never downloads. */
export const locate = (source: ModelSource, kind: "embedding" | "reranking"): Effect.Effect<Located, LocalModelError> =>
  Effect.suspend(() => {
    const looked: Array<string> = []
    const problems: Array<string> = []
    const folder = resolve(source.model)
    const tryFolder = (dir: string): Located | undefined => {
      looked.push(dir)
      if (!isDir(dir)) {
        problems.push(`${dir}: no such folder`)
        return undefined
      }
      const r = inspect(dir)
      if (!r.ok) {
        problems.push(`${dir}: missing ${r.missing.join(", ")}`)
        return undefined
      }
      return { path: dir, remote: false, subfolder: r.subfolder, dtype: r.dtype, config: readConfig(dir), where: dir }
    }
    const local = tryFolder(folder)
    if (local !== undefined) return Effect.succeed(local)
    const isHub = hubId.test(source.model) && !existsSync(folder)
    if (isHub) {
      const cached = tryFolder(resolve(source.cacheDir ?? defaultCacheDir, source.model))
      if (cached !== undefined) return Effect.succeed(cached)
      if (source.allowDownloads === true) {
        return Effect.succeed({ path: source.model, remote: true, subfolder: "onnx", dtype: "fp32", config: undefined, where: source.model })
      }
    }
    return Effect.fail(
      new LocalModelError({
        model: source.model,
        reason: "not_found",
        looked,
        message: `no ${kind} model ${JSON.stringify(source.model)}: ${problems.join("; ")}.` +
          (isHub ? " Downloads are off (the default), so the hub was not asked." : "") +
          ` ${howTo(kind)}`
      })
    )
  })

// -----------------------------------------------------------------------------
// transformers.js
// -----------------------------------------------------------------------------

/** The transformers.js module (loaded on first use: it pulls in onnxruntime-node). */
export type Transformers = typeof import("@huggingface/transformers")

let transformers: Promise<Transformers> | undefined

/** Imports transformers.js once, with remote models off. */
export const importTransformers = (): Promise<Transformers> => {
  transformers ??= import("@huggingface/transformers").then((t) => {
    t.env.allowRemoteModels = false
    t.env.allowLocalModels = true
    return t
  })
  transformers.catch(() => {
    transformers = undefined
  })
  return transformers
}

// Loads go one at a time: `env.allowRemoteModels` is global and is on only during an allowed download.
let queue: Promise<unknown> = Promise.resolve()

/**
 * Runs `load` with the pretrained-model options for `located` (local files only unless the
 * download was allowed), turning failures into a {@link LocalModelError}.
 */
export const loadWith = <A>(
  located: Located,
  source: ModelSource,
  load: (t: Transformers, options: Record<string, unknown>) => Promise<A>
): Effect.Effect<A, LocalModelError> =>
  Effect.tryPromise({
    try: () => {
      const run = queue.then(async () => {
        const t = await importTransformers()
        const options: Record<string, unknown> = {
          local_files_only: !located.remote,
          subfolder: located.subfolder,
          dtype: located.dtype,
          device: "cpu"
        }
        if (located.remote) {
          t.env.cacheDir = resolve(source.cacheDir ?? defaultCacheDir)
          t.env.allowRemoteModels = true
        }
        try {
          return await load(t, options)
        } finally {
          t.env.allowRemoteModels = false
        }
      })
      queue = run.catch(() => undefined)
      return run
    },
    catch: (cause) =>
      new LocalModelError({
        model: source.model,
        reason: "load_failed",
        looked: [located.where],
        message: `the model at ${located.where} did not load: ${cause instanceof Error ? cause.message : String(cause)}`,
        cause
      })
  })
