/**
 * ONNX models built by the tests themselves: nothing ships, nothing is downloaded, nothing is
 * committed as a binary. An ONNX file is a protobuf `ModelProto`; the helpers below write that
 * wire format by hand (varints and length-delimited fields), enough for small graphs with
 * float32/float16/int64 initializers, typed inputs and outputs and integer attributes.
 *
 * On top of them, two Hugging Face-layout model folders that transformers.js loads like any
 * exported BERT:
 * - {@link writeEmbeddingModel}: a feature-extraction model whose `last_hidden_state` is the
 *   row of a fixed embedding table for each token (`Gather(E, input_ids)`), so a pooled vector
 *   can be predicted exactly from the token ids;
 * - {@link writeCrossEncoder}: a one-label sequence classifier whose logit is the number of word
 *   occurrences a query and a document share (a bag-of-words dot product over one-hot rows,
 *   segments told apart by `token_type_ids`) minus a bias and a small document-length penalty
 *   (which makes it asymmetric, like a real cross-encoder), so documents sharing more words
 *   with the query score higher, predictably.
 *
 * Both use the same real WordPiece tokenizer (`tokenizer.json` in the Hugging Face `tokenizers`
 * format: BERT normaliser and pre-tokeniser, a 37-entry vocabulary with subwords, `[CLS] $A
 * [SEP]` / `[CLS] $A [SEP] $B [SEP]` templates with type ids) and a maximum length of 64 tokens
 * (`tokenizer_config.json`), so truncation can be tested with short texts.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"

// =============================================================================
// Protobuf wire format
// =============================================================================

/** A base-128 varint; negative numbers as 64-bit two's complement (protobuf `int64`). */
export const varint = (n: number): Array<number> => {
  if (!Number.isSafeInteger(n)) throw new Error(`varint: ${n} is not a safe integer`)
  const out: Array<number> = []
  let v = n < 0 ? BigInt.asUintN(64, BigInt(n)) : BigInt(n)
  while (v > 127n) {
    out.push(Number(v & 127n) | 128)
    v >>= 7n
  }
  out.push(Number(v))
  return out
}

/** A field: a number as a varint (wire type 0), anything else length-delimited (wire type 2). */
export const field = (no: number, value: number | string | ArrayLike<number>): Array<number> => {
  if (typeof value === "number") return [...varint(no << 3), ...varint(value)]
  const bytes = typeof value === "string" ? [...Buffer.from(value, "utf8")] : Array.from(value)
  return [...varint((no << 3) | 2), ...varint(bytes.length), ...bytes]
}

// =============================================================================
// ONNX messages (onnx.proto3 field numbers)
// =============================================================================

/** `TensorProto.DataType` values used here. */
export const DataType = { float: 1, int64: 7, float16: 10 } as const
export type DataType = (typeof DataType)[keyof typeof DataType]

/** `ValueInfoProto`: a named tensor type; a string dimension is symbolic (`batch`, `seq`). */
export const valueInfo = (name: string, elemType: DataType, shape: ReadonlyArray<number | string>): Array<number> => {
  const dims = shape.flatMap((d) => field(1, typeof d === "number" ? field(1, d) : field(2, d)))
  const tensorType = field(1, elemType).concat(field(2, dims))
  return field(1, name).concat(field(2, field(1, tensorType)))
}

/** A float32 vector of shape [3] (the `Add` graph's input and output). */
export const tensorInfo = (name: string): Array<number> => valueInfo(name, DataType.float, [3])

/** `TensorProto` (an initializer): dims, data type, name, little-endian `raw_data`. */
export const floatTensor = (name: string, dims: ReadonlyArray<number>, values: Float32Array): Array<number> => {
  const size = dims.reduce((a, b) => a * b, 1)
  if (size !== values.length) throw new Error(`floatTensor ${name}: ${values.length} values for dims ${dims.join("x")}`)
  const raw = Buffer.alloc(values.length * 4)
  values.forEach((v, i) => raw.writeFloatLE(v, i * 4))
  return dims.flatMap((d) => field(1, d)).concat(field(2, DataType.float), field(8, name), field(9, raw))
}

/** The nearest IEEE half-precision value, as its 16 bits (round to nearest even; no NaN here). */
export const toHalfBits = (x: number): number => {
  const f = new Float32Array([x])
  const u = new Uint32Array(f.buffer)[0]!
  const sign = (u >>> 16) & 0x8000
  const exp = (u >>> 23) & 0xff
  const mant = u & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00
  const e = exp - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00
  if (e <= 0) {
    if (e < -10) return sign
    const m = mant | 0x800000
    const shift = 14 - e
    let half = m >> shift
    const rest = m & ((1 << shift) - 1)
    const mid = 1 << (shift - 1)
    if (rest > mid || (rest === mid && (half & 1) === 1)) half++
    return sign | half
  }
  let half = (e << 10) | (mant >> 13)
  const rest = mant & 0x1fff
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half++
  return sign | half
}

/** The value of half-precision bits. */
export const fromHalfBits = (h: number): number => {
  const sign = h & 0x8000 ? -1 : 1
  const exp = (h >> 10) & 0x1f
  const mant = h & 0x3ff
  if (exp === 0) return sign * mant * 2 ** -24
  if (exp === 0x1f) return sign * Infinity
  return sign * (1 + mant / 1024) * 2 ** (exp - 15)
}

/** A float16 initializer from float values (rounded to half precision). */
export const float16Tensor = (name: string, dims: ReadonlyArray<number>, values: ArrayLike<number>): Array<number> => {
  const raw = Buffer.alloc(values.length * 2)
  for (let i = 0; i < values.length; i++) raw.writeUInt16LE(toHalfBits(values[i]!), i * 2)
  return dims.flatMap((d) => field(1, d)).concat(field(2, DataType.float16), field(8, name), field(9, raw))
}

/** An int64 initializer (e.g. the `axes` input of `ReduceSum` and `Unsqueeze` at opset 13). */
export const int64Tensor = (name: string, dims: ReadonlyArray<number>, values: ReadonlyArray<number>): Array<number> => {
  const raw = Buffer.alloc(values.length * 8)
  values.forEach((v, i) => raw.writeBigInt64LE(BigInt(v), i * 8))
  return dims.flatMap((d) => field(1, d)).concat(field(2, DataType.int64), field(8, name), field(9, raw))
}

/** `AttributeProto` of type INT. */
export const intAttribute = (name: string, value: number): Array<number> =>
  field(1, name).concat(field(3, value), field(20, 2))

/** `AttributeProto` of type INTS. */
export const intsAttribute = (name: string, values: ReadonlyArray<number>): Array<number> =>
  field(1, name).concat(values.flatMap((v) => field(8, v)), field(20, 7))

/** `NodeProto`: inputs, outputs, operator type and attributes (default domain). */
export const node = (
  opType: string,
  inputs: ReadonlyArray<string>,
  outputs: ReadonlyArray<string>,
  attributes: ReadonlyArray<Array<number>> = []
): Array<number> =>
  inputs.flatMap((i) => field(1, i)).concat(
    outputs.flatMap((o) => field(2, o)),
    field(4, opType),
    attributes.flatMap((a) => field(5, a))
  )

/** A graph to encode with {@link model}. */
export interface Graph {
  readonly name: string
  readonly nodes: ReadonlyArray<Array<number>>
  readonly initializers?: ReadonlyArray<Array<number>> | undefined
  readonly inputs: ReadonlyArray<Array<number>>
  readonly outputs: ReadonlyArray<Array<number>>
}

/** `ModelProto`: IR version 8, one opset import of the default domain (13 unless given). */
export const model = (graph: Graph, opset = 13): Uint8Array => {
  const g = graph.nodes.flatMap((n) => field(1, n)).concat(
    field(2, graph.name),
    (graph.initializers ?? []).flatMap((t) => field(5, t)),
    graph.inputs.flatMap((i) => field(11, i)),
    graph.outputs.flatMap((o) => field(12, o))
  )
  return Uint8Array.from(field(1, 8).concat(field(2, "effect-rag-tests"), field(7, g), field(8, field(2, opset))))
}

/** The graph `y = x + x` over float32 [3]. */
export const addModel = (): Uint8Array =>
  model({ name: "g", nodes: [node("Add", ["x", "x"], ["y"])], inputs: [tensorInfo("x")], outputs: [tensorInfo("y")] })

// =============================================================================
// The tokenizer
// =============================================================================

/** The special tokens, ids 0..4. */
export const specialTokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] as const

/** The vocabulary: the special tokens, then words, subwords (`##`) and punctuation. */
export const vocab: ReadonlyArray<string> = [
  ...specialTokens,
  ...["the", "a", "cat", "dog", "kitten", "sat", "on", "mat", "play", "##s", "##ing", "##ed", "stock", "market", "fell"],
  ...["rate", "rain", "wind", "bread", "cheese", "fish", "river", "bank", "money", "interest", "sleep", "is", "and"],
  ...["of", "in", ".", ","]
]

/** The id of a vocabulary entry. */
export const tokenId = (token: string): number => {
  const id = vocab.indexOf(token)
  if (id === -1) throw new Error(`not in the test vocabulary: ${token}`)
  return id
}

/** `tokenizer.json` in the Hugging Face `tokenizers` format: a BERT-style WordPiece tokenizer. */
export const tokenizerJson = (): Record<string, unknown> => {
  const special = (token: string, typeId: number) => ({ SpecialToken: { id: token, type_id: typeId } })
  const sequence = (id: "A" | "B", typeId: number) => ({ Sequence: { id, type_id: typeId } })
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specialTokens.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true
    })),
    normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)],
      pair: [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1), special("[SEP]", 1)],
      special_tokens: Object.fromEntries(
        ["[CLS]", "[SEP]"].map((t) => [t, { id: t, ids: [tokenId(t)], tokens: [t] }])
      )
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: {
      type: "WordPiece",
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((t, i) => [t, i]))
    }
  }
}

/** `tokenizer_config.json`: the BERT tokenizer class (which returns `token_type_ids`). */
export const tokenizerConfig = (): Record<string, unknown> => ({
  tokenizer_class: "BertTokenizer",
  do_lower_case: true,
  model_max_length: 64,
  pad_token: "[PAD]",
  unk_token: "[UNK]",
  cls_token: "[CLS]",
  sep_token: "[SEP]",
  mask_token: "[MASK]",
  clean_up_tokenization_spaces: true
})

// =============================================================================
// Model folders
// =============================================================================

/**
 * Where the weights go: the usual `onnx/model.onnx`, or other names the layers accept. An
 * `_fp16` file gives float16 outputs (the embedding model's table is float16 too; the
 * cross-encoder computes in float32 and casts its logits); the others are float32 throughout.
 */
export type WeightsFile = "onnx/model.onnx" | "model.onnx" | "onnx/model_quantized.onnx" | "onnx/model_fp16.onnx"

const bertConfig = (hiddenSize: number, extra: Record<string, unknown>): Record<string, unknown> => ({
  model_type: "bert",
  hidden_size: hiddenSize,
  vocab_size: vocab.length,
  num_hidden_layers: 1,
  num_attention_heads: 1,
  intermediate_size: hiddenSize,
  hidden_act: "gelu",
  max_position_embeddings: 64,
  type_vocab_size: 2,
  pad_token_id: 0,
  layer_norm_eps: 1e-12,
  ...extra
})

const writeFolder = (dir: string, config: Record<string, unknown>, weights: WeightsFile, onnx: Uint8Array): void => {
  mkdirSync(dirname(join(dir, weights)), { recursive: true })
  writeFileSync(join(dir, "config.json"), JSON.stringify(config, null, 2))
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(tokenizerJson()))
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(tokenizerConfig(), null, 2))
  writeFileSync(join(dir, weights), onnx)
}

/**
 * The embedding table of {@link writeEmbeddingModel}: row `i`, column `j` is
 * `sin(1.3 (i + 1) + 0.7 (j + 1)^1.5)`, rounded to float32; every row is distinct, none is zero
 * (the `[PAD]` row included, so a padding token that leaked into a pooled vector would show).
 */
export const embeddingTable = (dimension: number): Float32Array => {
  const e = new Float32Array(vocab.length * dimension)
  for (let i = 0; i < vocab.length; i++) {
    for (let j = 0; j < dimension; j++) e[i * dimension + j] = Math.sin(1.3 * (i + 1) + 0.7 * (j + 1) ** 1.5)
  }
  return e
}

/** A model folder written by {@link writeEmbeddingModel}. */
export interface EmbeddingModel {
  readonly dir: string
  readonly dimension: number
  /** The embedding table, `vocab.length` rows of `dimension` float32 values. */
  readonly table: Float32Array
  /** Row `id` of the table. */
  readonly row: (id: number) => Float32Array
}

/**
 * A BERT-shaped feature-extraction model: inputs `input_ids` and `attention_mask` (int64
 * [batch, seq]; the mask is declared, as transformers.js feeds only declared inputs, and left to
 * the pooling), output `last_hidden_state = Gather(E, input_ids)`, float32 [batch, seq, D]
 * (float16, table included, for `onnx/model_fp16.onnx`; the `table` returned is then the
 * half-precision values). About 1.3 KB of weights at D = 8.
 */
export const writeEmbeddingModel = (
  dir: string,
  options: { readonly dimension?: number | undefined; readonly weights?: WeightsFile | undefined } = {}
): EmbeddingModel => {
  const dimension = options.dimension ?? 8
  const weights = options.weights ?? "onnx/model.onnx"
  const half = weights.endsWith("_fp16.onnx")
  const exact = embeddingTable(dimension)
  const table = half ? exact.map((x) => fromHalfBits(toHalfBits(x))) : exact
  const onnx = model({
    name: "tiny-bert-embeddings",
    nodes: [node("Gather", ["embeddings", "input_ids"], ["last_hidden_state"], [intAttribute("axis", 0)])],
    initializers: [
      half ? float16Tensor("embeddings", [vocab.length, dimension], table) : floatTensor("embeddings", [vocab.length, dimension], table)
    ],
    inputs: [
      valueInfo("input_ids", DataType.int64, ["batch", "sequence"]),
      valueInfo("attention_mask", DataType.int64, ["batch", "sequence"])
    ],
    outputs: [valueInfo("last_hidden_state", half ? DataType.float16 : DataType.float, ["batch", "sequence", dimension])]
  })
  writeFolder(dir, bertConfig(dimension, { architectures: ["BertModel"] }), weights, onnx)
  return { dir, dimension, table, row: (id) => table.slice(id * dimension, (id + 1) * dimension) }
}

/** A model folder written by {@link writeCrossEncoder}. */
export interface CrossEncoder {
  readonly dir: string
  /** Subtracted from the overlap to give the logit. */
  readonly bias: number
  /** Subtracted per token of the document segment (its words and its closing `[SEP]`). */
  readonly lengthPenalty: number
  /** Whether the logits are float16 (rounded to half precision). */
  readonly half: boolean
}

/**
 * A BERT-shaped cross-encoder (sequence classification, one label): inputs `input_ids`,
 * `attention_mask` and `token_type_ids` (int64 [batch, seq]); output `logits` (float32
 * [batch, 1]):
 *
 *     X = Gather(I, input_ids)                            one-hot rows; special tokens' rows zero
 *     q = ReduceSum(X * (attention_mask - token_type_ids), seq)   bag of words of the query (A)
 *     d = ReduceSum(X * token_type_ids, seq)                       bag of words of the document (B)
 *     n = ReduceSum(token_type_ids, seq)                           tokens of the document
 *     logits = ReduceSum(q * d, hidden) - bias - lengthPenalty * n
 *
 * so the logit is `sum over words w of count_query(w) * count_document(w) - bias - lengthPenalty
 * * (document tokens + 1)` (subwords count as words; `[CLS]`, `[SEP]` and padding share nothing;
 * the document's `[SEP]` counts in its length). With the default penalty (0.01) and documents
 * under 50 tokens, one more shared word always outweighs the length, which only breaks ties
 * (shorter first) and tells the query from the document. About 5.5 KB of weights. Written as
 * `onnx/model_fp16.onnx`, the logits are cast to float16 at the end.
 */
export const writeCrossEncoder = (
  dir: string,
  options: {
    readonly bias?: number | undefined
    readonly lengthPenalty?: number | undefined
    readonly weights?: WeightsFile | undefined
  } = {}
): CrossEncoder => {
  const bias = options.bias ?? 1.5
  const lengthPenalty = options.lengthPenalty ?? 0.01
  const weights = options.weights ?? "onnx/model.onnx"
  const half = weights.endsWith("_fp16.onnx")
  const v = vocab.length
  const identity = new Float32Array(v * v)
  for (let i = specialTokens.length; i < v; i++) identity[i * v + i] = 1
  const onnx = model({
    name: "tiny-bert-cross-encoder",
    nodes: [
      node("Gather", ["onehot", "input_ids"], ["x"], [intAttribute("axis", 0)]),
      node("Cast", ["attention_mask"], ["mask"], [intAttribute("to", DataType.float)]),
      node("Cast", ["token_type_ids"], ["doc_mask"], [intAttribute("to", DataType.float)]),
      node("Sub", ["mask", "doc_mask"], ["query_mask"]),
      node("Unsqueeze", ["query_mask", "axis_2"], ["query_mask3"]),
      node("Unsqueeze", ["doc_mask", "axis_2"], ["doc_mask3"]),
      node("Mul", ["x", "query_mask3"], ["query_x"]),
      node("Mul", ["x", "doc_mask3"], ["doc_x"]),
      node("ReduceSum", ["query_x", "axis_1"], ["query_bag"], [intAttribute("keepdims", 0)]),
      node("ReduceSum", ["doc_x", "axis_1"], ["doc_bag"], [intAttribute("keepdims", 0)]),
      node("Mul", ["query_bag", "doc_bag"], ["shared"]),
      node("ReduceSum", ["shared", "axis_1"], ["overlap"], [intAttribute("keepdims", 1)]),
      node("ReduceSum", ["doc_mask", "axis_1"], ["doc_length"], [intAttribute("keepdims", 1)]),
      node("Mul", ["doc_length", "length_penalty"], ["penalty"]),
      node("Sub", ["overlap", "bias"], ["biased"]),
      ...(half
        ? [
          node("Sub", ["biased", "penalty"], ["logits32"]),
          node("Cast", ["logits32"], ["logits"], [intAttribute("to", DataType.float16)])
        ]
        : [node("Sub", ["biased", "penalty"], ["logits"])])
    ],
    initializers: [
      floatTensor("onehot", [v, v], identity),
      int64Tensor("axis_1", [1], [1]),
      int64Tensor("axis_2", [1], [2]),
      floatTensor("bias", [1], Float32Array.of(bias)),
      floatTensor("length_penalty", [1], Float32Array.of(lengthPenalty))
    ],
    inputs: ["input_ids", "attention_mask", "token_type_ids"].map((n) => valueInfo(n, DataType.int64, ["batch", "sequence"])),
    outputs: [valueInfo("logits", half ? DataType.float16 : DataType.float, ["batch", 1])]
  })
  writeFolder(
    dir,
    bertConfig(v, {
      architectures: ["BertForSequenceClassification"],
      num_labels: 1,
      id2label: { "0": "LABEL_0" },
      label2id: { LABEL_0: 0 },
      problem_type: "regression"
    }),
    weights,
    onnx
  )
  return { dir, bias, lengthPenalty, half }
}
