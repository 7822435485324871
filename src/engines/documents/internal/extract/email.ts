/**
 * E-mail: a single message (`.eml`, `message/rfc822`) and a mailbox (`.mbox`, many messages).
 * Parsed by postal-mime (MIME structure, transfer and header encodings, charsets, address
 * lists). A message is read as its headers (subject as title; from, to, cc and date as
 * properties and as lines at the top of its text), its text body (or its HTML body as Markdown
 * when it has no text part) and a list of its attachments with their sizes. The attachments of
 * a format the engine reads (PDF, Office, OpenDocument, text, … — not images or audio) are
 * extracted through the same dispatcher, each as a unit of its own named by its file name; one
 * that fails is listed with a warning. A mailbox is split on its `From ` lines (mboxrd: `>From `
 * unescaped), one unit per message named by its subject and date; attachments there are listed.
 *
 * Hostile input: the file size limit applies before this runs; the MIME parts of a message
 * (counted by their boundary lines before parsing), the MIME nesting depth, the depth of
 * messages inside messages and the messages of a mailbox are capped with `limit_exceeded`.
 */
import { createHash } from "node:crypto"
import PostalMime, { type Address, type Email } from "postal-mime"
import { htmlToMarkdown, parseHtml } from "./markdown.js"
import { ExtractFailure, type Extracted, type ExtractRequest, type Unit } from "./types.js"

/** Limits of an e-mail or a mailbox. */
export const emailLimits = {
  /** MIME parts of one message (its boundary delimiter lines). */
  parts: 1_000,
  /** Nesting of multipart bodies inside each other. */
  mimeDepth: 32,
  /** Messages inside messages (forwarded as `message/rfc822`). */
  messageDepth: 8,
  /** Messages of one mailbox. */
  mboxMessages: 10_000,
  /** Attachments of one message whose text is extracted (the rest are listed). */
  extractedAttachments: 50
} as const

/** Runs the engine's dispatcher on an attachment (passed in: the dispatcher imports this module). */
export type ExtractAttachment = (req: ExtractRequest) => Promise<Extracted>

const latin1 = (data: Uint8Array) => Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("latin1")

/** Counts the boundary delimiter lines of the multiparts a message declares; throws past the cap. */
const checkParts = (raw: string) => {
  const boundaries = new Set<string>()
  for (const m of raw.matchAll(/boundary\s*=\s*(?:"([^"\r\n]{1,200})"|([^\s;"]{1,200}))/gi)) boundaries.add(m[1] ?? m[2]!)
  if (boundaries.size === 0) return
  let parts = 0
  for (const m of raw.matchAll(/^--([^\r\n]{1,204})/gm)) {
    // a delimiter opens a part; a close delimiter (`--boundary--`) does not
    if (boundaries.has(m[1]!.trimEnd())) {
      parts++
      if (parts > emailLimits.parts) {
        throw new ExtractFailure("limit_exceeded", `the message has more than ${emailLimits.parts} MIME parts`)
      }
    }
  }
}

const mailbox = (a: Address): string =>
  a.group
    ? `${a.name}: ${a.group.map(mailbox).join(", ")};`
    : a.name && a.name !== a.address
    ? `${a.name} <${a.address}>`
    : a.address
const addresses = (list: ReadonlyArray<Address> | Address | undefined): string | undefined => {
  if (list === undefined) return undefined
  const all = (Array.isArray(list) ? list : [list]).map(mailbox).filter((s) => s !== "")
  return all.length > 0 ? all.join(", ") : undefined
}

/** The extension an unnamed part gets, so that it reads as its type says. */
const extensions: Record<string, string> = {
  "text/plain": ".txt",
  "text/html": ".html",
  "text/calendar": ".ics",
  "text/csv": ".csv",
  "message/rfc822": ".eml",
  "application/pdf": ".pdf"
}

const size = (bytes: number): string =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${Math.round(bytes / 1024)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`

const bytesOf = (content: ArrayBuffer | Uint8Array | string): Uint8Array =>
  typeof content === "string" ? new TextEncoder().encode(content) : content instanceof Uint8Array ? content : new Uint8Array(content)

/** A parsed message. */
interface Message {
  readonly email: Email
  readonly subject: string | undefined
  readonly properties: Record<string, string>
  /** Headers, body and the attachment list, as Markdown. */
  readonly content: string
  readonly attachments: ReadonlyArray<{ readonly name: string; readonly type: string; readonly data: Uint8Array }>
}

/**
 * Whether a part is part of the body rather than an attachment: an image the HTML body shows
 * (inside multipart/related with a Content-ID, not marked as an attachment), or the Apple
 * Watch rendering of the HTML body (`text/watch-html`, an alternative without a file name).
 */
const isBodyPart = (a: Email["attachments"][number]): boolean =>
  (a.related === true && a.mimeType.startsWith("image/") && a.disposition !== "attachment") ||
  (a.mimeType === "text/watch-html" && !a.filename)

/**
 * Whether a part is the body's calendar rendering of an invitation (an unnamed `text/calendar`
 * alternative, not marked as an attachment) that the message also attaches as a named file:
 * the file is listed and read, the alternative is not listed a second time.
 */
const isCalendarCopy = (a: Email["attachments"][number], all: Email["attachments"]): boolean => {
  if (a.mimeType !== "text/calendar" || a.filename || a.disposition === "attachment") return false
  const bytes = bytesOf(a.content)
  return all.some((b) => b !== a && !!b.filename && Buffer.from(bytesOf(b.content)).equals(Buffer.from(bytes)))
}

const parseMessage = async (data: Uint8Array): Promise<Message> => {
  checkParts(latin1(data))
  let email: Email
  try {
    email = await PostalMime.parse(data, {
      maxNestingDepth: emailLimits.mimeDepth,
      maxRfc822NestingDepth: emailLimits.messageDepth,
      attachmentEncoding: "arraybuffer"
    })
  } catch (e) {
    const message = (e as Error)?.message ?? String(e)
    if (/nesting depth|header size/i.test(message)) throw new ExtractFailure("limit_exceeded", `the message exceeds a limit: ${message}`)
    throw new ExtractFailure("corrupt", `the message cannot be parsed: ${message}`)
  }
  if (email.attachments.some((a) => a.rfc822DepthExceeded)) {
    throw new ExtractFailure(
      "limit_exceeded",
      `the message nests messages more than ${emailLimits.messageDepth} levels deep`
    )
  }
  const subject = email.subject?.replace(/\s+/g, " ").trim() || undefined
  const properties: Record<string, string> = {}
  const from = addresses(email.from)
  const to = addresses(email.to)
  const cc = addresses(email.cc)
  if (from) properties.from = from
  if (to) properties.to = to
  if (cc) properties.cc = cc
  if (email.date) properties.date = email.date
  // the date as the message gives it (weekday and the sender's time zone kept); the property is ISO
  const writtenDate = email.headers.find((h) => h.key === "date")?.value.replace(/\s+/g, " ").trim()
  const head = [
    from && `From: ${from}`,
    to && `To: ${to}`,
    cc && `Cc: ${cc}`,
    email.date && `Date: ${writtenDate || email.date}`,
    subject && `Subject: ${subject}`
  ].filter((l): l is string => typeof l === "string")
  const text = email.text?.replace(/\r\n?/g, "\n").trim()
  const body = text ? text : email.html ? htmlToMarkdown(parseHtml(email.html)).trim() : ""
  const files = email.attachments.filter((a) => !isBodyPart(a) && !isCalendarCopy(a, email.attachments))
  const attachments = files.map((a, i) => ({
    name: a.filename?.trim() || `attachment-${i + 1}${extensions[a.mimeType] ?? ""}`,
    type: a.mimeType,
    data: bytesOf(a.content)
  }))
  const list = attachments.length > 0
    ? `Attachments: ${attachments.map((a) => `${a.name} (${size(a.data.byteLength)})`).join(", ")}`
    : ""
  const content = [head.join("\n"), body, list].filter((s) => s !== "").join("\n\n")
  if (attachments.length > 0) properties.attachments = String(attachments.length)
  return { email, subject, properties, content, attachments }
}

/** The formats whose text is worth extracting from an attachment (not pictures or sound). */
const readable = (type: string, name: string) =>
  !/^(image|audio|video)\//.test(type) && !/\.(png|jpe?g|gif|bmp|tiff?|webp|mp3|wav|ogg|m4a|mp4|mov)$/i.test(name)

/** Extracts a single message (`.eml`). */
export const extractEmail = async (req: ExtractRequest, extract: ExtractAttachment): Promise<Extracted> => {
  const message = await parseMessage(req.data)
  const units: Array<Unit> = [{ page: 1, name: message.subject, content: message.content }]
  const warnings: Array<string> = []
  let extracted = 0
  // a calendar invitation comes both as an alternative body and as an .ics attachment: read it once
  const seen = new Set<string>()
  for (const a of message.attachments) {
    if (a.data.byteLength === 0 || !readable(a.type, a.name)) continue
    const digest = createHash("sha256").update(a.data).digest("hex")
    if (seen.has(digest)) continue
    seen.add(digest)
    if (extracted >= emailLimits.extractedAttachments) {
      warnings.push(`only the first ${emailLimits.extractedAttachments} attachments were read; the rest are listed`)
      break
    }
    extracted++
    try {
      const doc = await extract({ name: a.name, type: a.type, data: a.data, options: req.options })
      const content = doc.units.map((u) => u.content).filter((c) => c.trim() !== "").join("\n\n")
      if (content.trim() !== "") units.push({ page: units.length + 1, name: a.name, content })
    } catch (e) {
      const reason = e instanceof ExtractFailure ? e.reason : "corrupt"
      if (reason === "limit_exceeded" || reason === "timeout") throw e
      // a format the engine does not read (an archive, a binary) is in the list, which says enough
      if (reason !== "unsupported") warnings.push(`attachment ${a.name} was listed, not read (${reason})`)
    }
  }
  return {
    format: "email",
    units,
    title: message.subject,
    metadata: message.properties,
    warnings
  }
}

/** Splits a mailbox on its `From ` separator lines; each message with its `>From ` lines unescaped (mboxrd). */
export const splitMbox = (text: string): Array<string> => {
  const messages: Array<string> = []
  const starts: Array<number> = []
  const separator = /^From [^\r\n]*\r?\n/gm
  for (const m of text.matchAll(separator)) {
    starts.push(m.index)
    if (starts.length > emailLimits.mboxMessages) {
      throw new ExtractFailure("limit_exceeded", `the mailbox has more than ${emailLimits.mboxMessages} messages`)
    }
  }
  for (let i = 0; i < starts.length; i++) {
    const chunk = text.slice(starts[i], starts[i + 1] ?? text.length)
    const body = chunk.slice(chunk.indexOf("\n") + 1).replace(/^>(>*From )/gm, "$1")
    if (body.trim() !== "") messages.push(body)
  }
  return messages
}

/** Extracts a mailbox (`.mbox`): one unit per message, named by its subject and date. */
export const extractMbox = async (data: Uint8Array): Promise<Extracted> => {
  const text = latin1(data)
  const raw = splitMbox(text)
  if (raw.length === 0) throw new ExtractFailure("corrupt", "the mailbox has no `From ` separator lines")
  const units: Array<Unit> = []
  const warnings: Array<string> = []
  for (const [i, r] of raw.entries()) {
    let message: Message
    try {
      message = await parseMessage(Buffer.from(r, "latin1"))
    } catch (e) {
      if (e instanceof ExtractFailure && e.reason === "limit_exceeded") throw e
      warnings.push(`message ${i + 1} cannot be parsed and was left out`)
      continue
    }
    const date = message.email.date ? message.email.date.slice(0, 10) : undefined
    const name = [message.subject ?? `Message ${i + 1}`, date && `(${date})`].filter(Boolean).join(" ")
    units.push({ page: units.length + 1, name, content: message.content })
  }
  return { format: "mbox", units, metadata: { messages: String(units.length) }, warnings }
}
