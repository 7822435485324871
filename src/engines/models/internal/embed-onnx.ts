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
 *
 * Inputs are tokenised here rather than by transformers.js's own call, to truncate them as the
 * Hugging Face tokenizers do (see {@link encodeWithin}): separators kept, pairs cut longest side
 * first.
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

// -----------------------------------------------------------------------------
// Tokenising within the model's length
// -----------------------------------------------------------------------------

/** The parts of a transformers.js tokenizer the layers use. */
export interface TextTokenizer {
  (text: string, options: { text_pair: string | null; return_tensor: false }): {
    readonly input_ids: ReadonlyArray<number>
    readonly attention_mask: ReadonlyArray<number>
    readonly token_type_ids?: ReadonlyArray<number> | undefined
  }
  readonly encode: (text: string, options: { add_special_tokens: boolean }) => Array<number>
  readonly model_max_length: number
  readonly pad_token_id: number | null | undefined
  readonly padding_side: string
}

/** One encoded input: token ids, and segment (type) ids when the tokenizer gives them. */
export interface Encoding {
  readonly ids: ReadonlyArray<number>
  readonly types: ReadonlyArray<number> | undefined
}

const occursAt = (hay: ReadonlyArray<number>, needle: ReadonlyArray<number>, at: number): boolean => {
  if (at + needle.length > hay.length) return false
  for (let i = 0; i < needle.length; i++) if (hay[at + i] !== needle[i]) return false
  return true
}

/**
 * Encodes a text, or a pair (a query and a document), within the model's maximum length the
 * way the Hugging Face tokenizers (and so sentence-transformers) do: the texts are cut before
 * the special tokens are added, so a separator (`[SEP]`, `</s>`) still closes every segment, and
 * a pair loses tokens from its longer side first (`longest_first`: the shorter side keeps at
 * most half the room). transformers.js itself cuts the finished sequence at the limit, which
 * drops the closing separator and, when the first text alone fills the room, the whole second
 * text: a cross-encoder then scores the query against nothing.
 *
 * The template (where the special tokens go) is read off the untruncated encoding; if the texts
 * cannot be found in it (a tokenizer whose pieces depend on their neighbours), the sequence is
 * cut at the limit as transformers.js does.
 */
export const encodeWithin = (tokenizer: TextTokenizer, text: string, pair?: string | undefined): Encoding => {
  const full = tokenizer(text, { text_pair: pair ?? null, return_tensor: false })
  const ids = [...full.input_ids]
  const types = full.token_type_ids === undefined ? undefined : [...full.token_type_ids]
  const max = tokenizer.model_max_length
  if (!Number.isFinite(max) || max <= 0 || ids.length <= max) return { ids, types }
  const cut = () => ({ ids: ids.slice(0, max), types: types?.slice(0, max) })
  const a = tokenizer.encode(text, { add_special_tokens: false })
  // transformers.js treats an empty second text as none
  const b = pair === undefined || pair === "" ? [] : tokenizer.encode(pair, { add_special_tokens: false })
  const special = ids.length - a.length - b.length
  const budget = max - special
  if (special < 0 || budget <= 0) return cut()
  let aStart = -1
  for (let p = 0; p <= special && aStart === -1; p++) if (occursAt(ids, a, p)) aStart = p
  const aEnd = aStart + a.length
  let bStart = -1
  for (let g = 0; aStart !== -1 && g <= special - aStart && bStart === -1; g++) if (occursAt(ids, b, aEnd + g)) bStart = aEnd + g
  if (aStart === -1 || bStart === -1) return cut()
  const bEnd = bStart + b.length
  let keepA = a.length
  let keepB = b.length
  if (b.length === 0) keepA = Math.min(a.length, budget)
  else if (a.length + b.length > budget) {
    const shorter = Math.min(Math.min(a.length, b.length), Math.floor(budget / 2))
    if (a.length <= b.length) {
      keepA = shorter
      keepB = budget - shorter
    } else {
      keepA = budget - shorter
      keepB = shorter
    }
  }
  const pick = (xs: ReadonlyArray<number>) => [
    ...xs.slice(0, aStart + keepA),
    ...xs.slice(aEnd, bStart + keepB),
    ...xs.slice(bEnd)
  ]
  return { ids: pick(ids), types: types === undefined ? undefined : pick(types) }
}

/** A batch of encodings as the int64 tensors a model takes, padded as the tokenizer pads. */
export interface Batch {
  readonly inputs: Record<string, unknown>
  /** The attention mask, row by row (`length` per row). */
  readonly mask: Uint8Array
  readonly length: number
  /** Tokens read (the mask's ones). */
  readonly tokens: number
}

/** Pads encodings to the longest into `input_ids`, `attention_mask` and (when all have them) `token_type_ids`. */
export const toBatch = (t: Transformers, tokenizer: TextTokenizer, encodings: ReadonlyArray<Encoding>): Batch => {
  const n = encodings.length
  const length = Math.max(1, ...encodings.map((e) => e.ids.length))
  const pad = BigInt(tokenizer.pad_token_id ?? 0)
  const ids = new BigInt64Array(n * length).fill(pad)
  const attention = new BigInt64Array(n * length)
  const mask = new Uint8Array(n * length)
  const withTypes = encodings.every((e) => e.types !== undefined)
  const types = withTypes ? new BigInt64Array(n * length) : undefined
  let tokens = 0
  encodings.forEach((e, row) => {
    const start = row * length + (tokenizer.padding_side === "left" ? length - e.ids.length : 0)
    e.ids.forEach((id, i) => {
      ids[start + i] = BigInt(id)
      attention[start + i] = 1n
      mask[start + i] = 1
      if (types !== undefined) types[start + i] = BigInt(e.types![i]!)
    })
    tokens += e.ids.length
  })
  const tensor = (data: BigInt64Array) => new t.Tensor("int64", data, [n, length])
  return {
    inputs: {
      input_ids: tensor(ids),
      attention_mask: tensor(attention),
      ...(types === undefined ? {} : { token_type_ids: tensor(types) })
    },
    mask,
    length,
    tokens
  }
}

/** A model output as the layers read it. */
export interface OutputTensor {
  readonly type: string
  readonly dims: ReadonlyArray<number>
  readonly data: ArrayLike<number>
  readonly to: (type: "float32") => OutputTensor
}

/** The output's values as float32 (float16 outputs come as raw `Uint16Array` bits on Node without `Float16Array`). */
export const floats = (output: OutputTensor): ArrayLike<number> =>
  output.type === "float16" ? output.to("float32").data : output.data
