/**
 * Extraction-quality metrics: how close an extracted text is to a reference text of the same
 * document, in the terms retrieval cares about (benchmarks/README.md, "Extraction").
 *
 * - **Words** are maximal runs of letters and digits after NFKC normalisation and lower-casing
 *   (`Just-in-Time` is three words, `ﬁle` is `file`); each Han or kana character is a word;
 *   punctuation and Markdown syntax are not words.
 * - **Precision / recall / F1** compare the two texts as bags of words (a word counts as often
 *   as it occurs in both).
 * - **Reading order** is `2·LCS / (n + m)` over the two word sequences, each first reduced to
 *   the words the other text also has (so missing or extra text does not count twice): 1 when
 *   the shared words come in the same order, lower the more they are shuffled.
 * - **Glued-word rate** is the share of extracted words that are not in the reference but are
 *   two reference words written together (`issuedcan`).
 * - **Markup rate** is the number of Markdown escapes (`\[`, `-\>`) and emphasis markers (`**`,
 *   `__`, `*word*`, `_word_`) per 1000 extracted words: noise an exact phrase search trips on.
 *
 * @since 0.1.0
 */

const WORD = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}]|(?:(?![\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}])[\p{L}\p{N}\p{M}])+/gu

/**
 * The words of a text, in order (NFKC, lower case, letters and digits; each Chinese or Japanese
 * character is a word of its own, since those scripts do not space words).
 *
 * @since 0.1.0
 * @category utils
 */
export const words = (text: string): Array<string> => text.normalize("NFKC").toLowerCase().match(WORD) ?? []

const counts = (ws: ReadonlyArray<string>): Map<string, number> => {
  const m = new Map<string, number>()
  for (const w of ws) m.set(w, (m.get(w) ?? 0) + 1)
  return m
}

/**
 * Bag-of-words precision, recall and F1 of `candidate` against `reference`.
 *
 * @since 0.1.0
 * @category utils
 */
export const overlap = (
  candidate: ReadonlyArray<string>,
  reference: ReadonlyArray<string>
): { readonly precision: number; readonly recall: number; readonly f1: number } => {
  if (reference.length === 0 && candidate.length === 0) return { precision: 1, recall: 1, f1: 1 }
  const ref = counts(reference)
  let common = 0
  for (const [w, n] of counts(candidate)) common += Math.min(n, ref.get(w) ?? 0)
  const precision = candidate.length === 0 ? 0 : common / candidate.length
  const recall = reference.length === 0 ? 0 : common / reference.length
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall)
  return { precision, recall, f1 }
}

/**
 * Length of the longest common subsequence by Myers' O((n+m)·D) algorithm; undefined when the
 * edit distance D exceeds `maxD` (the caller then measures in windows).
 *
 * @since 0.1.0
 * @category utils
 */
export const lcsLength = (a: ReadonlyArray<string>, b: ReadonlyArray<string>, maxD: number): number | undefined => {
  const n = a.length
  const m = b.length
  const max = Math.min(n + m, maxD)
  const offset = max + 1
  const v = new Int32Array(2 * max + 3)
  for (let d = 0; d <= max; d++) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      v[offset + k] = x
      if (x >= n && y >= m) return (n + m - d) / 2
    }
  }
  return undefined
}

const WINDOW = 4000

/**
 * Reading-order score: `2·LCS / (n + m)` over the word sequences reduced to the words both
 * have. Long sequences whose edit distance is large are measured in aligned windows of 4000
 * words (proportional positions), a lower bound of the whole-sequence figure.
 *
 * @since 0.1.0
 * @category utils
 */
export const readingOrder = (candidate: ReadonlyArray<string>, reference: ReadonlyArray<string>): number => {
  const inRef = new Set(reference)
  const inCand = new Set(candidate)
  const a = candidate.filter((w) => inRef.has(w))
  const b = reference.filter((w) => inCand.has(w))
  if (a.length + b.length === 0) return reference.length === 0 ? 1 : 0
  const whole = lcsLength(a, b, 8_000)
  if (whole !== undefined) return (2 * whole) / (a.length + b.length)
  const windows = Math.ceil(Math.max(a.length, b.length) / WINDOW)
  let lcs = 0
  for (let i = 0; i < windows; i++) {
    const wa = a.slice(Math.floor((i * a.length) / windows), Math.floor(((i + 1) * a.length) / windows))
    const wb = b.slice(Math.floor((i * b.length) / windows), Math.floor(((i + 1) * b.length) / windows))
    lcs += lcsLength(wa, wb, wa.length + wb.length)!
  }
  return (2 * lcs) / (a.length + b.length)
}

/**
 * Share of candidate words that are two reference words (each ≥ 2 characters) run together.
 *
 * @since 0.1.0
 * @category utils
 */
export const gluedRate = (candidate: ReadonlyArray<string>, reference: ReadonlyArray<string>): number => {
  if (candidate.length === 0) return 0
  const vocab = new Set(reference)
  let glued = 0
  const verdict = new Map<string, boolean>()
  for (const w of candidate) {
    if (vocab.has(w) || w.length < 4) continue
    let isGlued = verdict.get(w)
    if (isGlued === undefined) {
      isGlued = false
      for (let i = 2; i <= w.length - 2 && !isGlued; i++) {
        isGlued = vocab.has(w.slice(0, i)) && vocab.has(w.slice(i))
      }
      verdict.set(w, isGlued)
    }
    if (isGlued) glued++
  }
  return glued / candidate.length
}

const MARKUP = /\\[\\`*_{}[\]()#+\-.!|>~<]|\*\*(?=[\p{L}\p{N}])|(?<=[\p{L}\p{N}])\*\*|__(?=[\p{L}\p{N}])|(?<=[\p{L}\p{N}])__|(?<![\p{L}\p{N}*])\*(?=[\p{L}\p{N}])[^*\n]{1,80}(?<=[\p{L}\p{N}])\*(?![\p{L}\p{N}*])|(?<![\p{L}\p{N}_])_(?=[\p{L}\p{N}])[^_\n]{1,80}(?<=[\p{L}\p{N}])_(?![\p{L}\p{N}_])/gu

/**
 * Markdown escapes and emphasis markers per 1000 words of a text.
 *
 * @since 0.1.0
 * @category utils
 */
export const markupRate = (text: string): number => {
  const n = words(text).length
  if (n === 0) return 0
  return ((text.match(MARKUP) ?? []).length * 1000) / n
}

/**
 * Every metric of one extracted text against its reference.
 *
 * @since 0.1.0
 * @category models
 */
export interface Quality {
  readonly precision: number
  readonly recall: number
  readonly f1: number
  readonly order: number
  readonly glued: number
  readonly markup: number
  readonly words: number
  readonly referenceWords: number
}

/**
 * Measures an extracted text against a reference text.
 *
 * @since 0.1.0
 * @category utils
 */
export const measure = (extracted: string, reference: string): Quality => {
  const c = words(extracted)
  const r = words(reference)
  return {
    ...overlap(c, r),
    order: readingOrder(c, r),
    glued: gluedRate(c, r),
    markup: markupRate(extracted),
    words: c.length,
    referenceWords: r.length
  }
}
