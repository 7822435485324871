/**
 * Whether a PDF page's text layer can be read, or the page needs OCR: the test that decides,
 * by default, which pages of a PDF are OCR'd. It looks at the text only (linear in its
 * length, no rendering), so a PDF with a readable text layer is never slowed by it.
 *
 * - `missing`: no visible character at all (a scanned page, a page of images).
 * - `garbage`: at least {@link judgedChars} visible characters, and either more than
 *   {@link maxOddShare} of them are private-use, control, unassigned or replacement characters
 *   (fonts without a Unicode map), or fewer than {@link minPlausibleShare} of them sit in
 *   word-like or number-like tokens ("glyph soup" such as `47>F/# N:FF#O6:,/#`).
 * - `ok`: anything else, including a short text (a page number, a caption) too small to judge.
 *
 * A token (whitespace-separated, punctuation around it ignored) is word-like when it is letters
 * (with marks, inner apostrophes, hyphens, dots and digits, as in `COVID-19` or `e.g`) whose
 * case changes from lower to upper at most once (`JavaScript`, not `aBcDe`), and, for a Latin
 * word of five letters or more, has a vowel; number-like when it is digits with the
 * separators of numbers, amounts, dates and times. Letters of scripts written without spaces
 * (Chinese, Japanese, Korean, Thai, …) count one by one.
 */

/** Text with fewer visible characters than this is too short to judge (and kept). */
export const judgedChars = 12
/** More than this share of private-use / control / unassigned characters is garbage. */
export const maxOddShare = 0.1
/** Less than this share of characters in word-like or number-like tokens is garbage. */
export const minPlausibleShare = 0.4

export type TextLayer = "ok" | "missing" | "garbage"

const odd = /[\p{Co}\p{Cn}\uFFFD\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/u
const edges = /^[\p{P}\p{S}]+|[\p{P}\p{S}]+$/gu
const wordShape = /^[\p{L}\p{N}][\p{L}\p{M}\p{N}]*(?:['’.\-][\p{L}\p{M}\p{N}]+)*$/u
const numberShape = /^[+\-±]?\d[\d.,:/\-]*$/u
const latin = /\p{Script=Latin}/u
const unspaced =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}\p{Script=Tibetan}\u30FC]/gu
const vowel = /[aeiouyAEIOUY]/

const isWord = (token: string): boolean => {
  if (!wordShape.test(token) || !/\p{L}/u.test(token)) return false
  if ((token.match(/\p{Ll}\p{Lu}/gu) ?? []).length > 1) return false
  const letters = token.replace(/[^\p{L}]/gu, "")
  if (letters.length >= 5 && latin.test(letters) && !vowel.test(letters.normalize("NFD"))) return false
  return letters.length <= 45
}

/** The state of a page's text layer (see the module comment). */
export const textLayer = (text: string): TextLayer => {
  const visible = text.replace(/\s+/gu, "")
  let count = 0
  let oddCount = 0
  for (const c of visible) {
    count++
    if (odd.test(c)) oddCount++
  }
  if (count === 0) return "missing"
  if (count < judgedChars) return "ok"
  if (oddCount / count > maxOddShare) return "garbage"
  // scripts written without spaces between words: each of their letters counts as plausible
  let plausible = 0
  const spaced = text.replace(unspaced, () => {
    plausible++
    return " "
  })
  for (const token of spaced.split(/\s+/u)) {
    const core = token.replace(edges, "")
    if (core !== "" && (numberShape.test(core) || isWord(core))) plausible += [...core].length
  }
  return plausible / count < minPlausibleShare ? "garbage" : "ok"
}
