/**
 * Token counting for embeddings-mode chunks. The default is js-tiktoken's `cl100k_base` (the
 * encoding of OpenAI's text-embedding-3 models), whose ranks ship inside the package; a caller
 * with an embedding model of its own passes that model's tokenizer instead.
 */

/** Counts tokens the way an embedding model does. */
export interface Tokenizer {
  /** A name for reports, e.g. `cl100k_base`. */
  readonly name: string
  /** The number of tokens of `text`. */
  readonly count: (text: string) => number
}

/** The BPE encodings whose ranks ship with js-tiktoken. */
export type TiktokenEncoding = "cl100k_base" | "o200k_base"

/** Loads a js-tiktoken encoding (no network: the ranks are part of the package). */
export const tiktoken = async (encoding: TiktokenEncoding = "cl100k_base"): Promise<Tokenizer> => {
  const { Tiktoken } = await import("js-tiktoken/lite")
  const ranks =
    encoding === "o200k_base"
      ? (await import("js-tiktoken/ranks/o200k_base")).default
      : (await import("js-tiktoken/ranks/cl100k_base")).default
  const enc = new Tiktoken(ranks)
  // special tokens are ordinary text in a document
  return { name: encoding, count: (text) => (text.length === 0 ? 0 : enc.encode(text, [], []).length) }
}
