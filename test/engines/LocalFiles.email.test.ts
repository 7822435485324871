/**
 * E-mail through the `Upload` service (the local engine, in its extraction processes): a single
 * message (`.eml`: headers as title and properties, the text body or the HTML body as Markdown,
 * attachments listed and the readable ones extracted as pages of their own), a mailbox (`.mbox`:
 * one page per message), detection without an extension, and the limits on hostile messages
 * (MIME parts, MIME nesting, messages inside messages, messages of a mailbox). The messages are
 * written here in the shapes mail programs write them (Thunderbird-style multipart/mixed with
 * base64 attachments, quoted-printable, RFC 2047 encoded words); the benchmark corpus holds
 * third-party ones.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Upload from "../../src/api/Upload.js"
import { detect } from "../../src/engines/documents/internal/extract/detect.js"
import { emailLimits, splitMbox } from "../../src/engines/documents/internal/extract/email.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"

const enc = new TextEncoder()
const file = (name: string, text: string, type?: string): Upload.UploadFile => ({ name, data: enc.encode(text), ...(type ? { type } : {}) })
const b64 = (s: string) => Buffer.from(s).toString("base64").replace(/.{76}/g, "$&\r\n")

/** A message with a text body, an HTML alternative, a CSV and a text attachment and an image. */
const message = [
  "Return-Path: <ada@example.org>",
  "Received: from mail.example.org (mail.example.org [192.0.2.1])",
  "\tby mx.example.net with ESMTPS id 1234",
  "Message-ID: <1@example.org>",
  "Date: Tue, 05 Mar 2024 09:30:00 +0000",
  "From: Ada Lovelace <ada@example.org>",
  "To: Charles Babbage <charles@example.net>, team@example.net",
  "Cc: =?UTF-8?Q?Fran=C3=A7oise?= <francoise@example.net>",
  "Subject: =?UTF-8?Q?Quarterly_figures_=E2=80=93_March?=",
  "MIME-Version: 1.0",
  "Content-Type: multipart/mixed; boundary=\"outer\"",
  "",
  "This is a multi-part message in MIME format.",
  "--outer",
  "Content-Type: multipart/alternative; boundary=\"alt\"",
  "",
  "--alt",
  "Content-Type: text/plain; charset=utf-8",
  "Content-Transfer-Encoding: quoted-printable",
  "",
  "Dear Charles,",
  "",
  "the engine ran 12 =E2=80=93 14 hours this week. Figures attached.",
  "",
  "Ada",
  "--alt",
  "Content-Type: text/html; charset=utf-8",
  "",
  "<p>Dear Charles,</p><p>the engine ran <b>12 – 14 hours</b> this week.</p>",
  "--alt--",
  "--outer",
  "Content-Type: text/csv; name=\"hours.csv\"",
  "Content-Disposition: attachment; filename=\"hours.csv\"",
  "Content-Transfer-Encoding: base64",
  "",
  b64("day,hours\nMonday,12\nTuesday,14\n"),
  "--outer",
  "Content-Type: text/plain; name=\"notes.txt\"",
  "Content-Disposition: attachment; filename=\"notes.txt\"",
  "",
  "The mill wheel needs oiling.",
  "--outer",
  "Content-Type: image/png; name=\"wheel.png\"",
  "Content-Disposition: attachment; filename=\"wheel.png\"",
  "Content-Transfer-Encoding: base64",
  "",
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]).toString("base64"),
  "--outer--",
  ""
].join("\r\n")

/** A newsletter with only an HTML body. */
const htmlOnly = [
  "From: news@example.org",
  "To: reader@example.net",
  "Subject: Spring newsletter",
  "Date: Mon, 1 Apr 2024 08:00:00 +0200",
  "MIME-Version: 1.0",
  "Content-Type: text/html; charset=iso-8859-1",
  "Content-Transfer-Encoding: quoted-printable",
  "",
  "<html><head><style>p{color:red}</style></head><body><h1>Spring</h1><ul><li>Caf=E9 opens</li><li>Garden tour</li></ul></body></html>",
  ""
].join("\r\n")

const mbox = [
  "From ada@example.org Tue Mar  5 09:30:00 2024",
  "From: ada@example.org",
  "Subject: First",
  "Date: Tue, 05 Mar 2024 09:30:00 +0000",
  "",
  "The first message.",
  ">From the archive: an escaped line.",
  "",
  "From charles@example.net Wed Mar  6 10:00:00 2024",
  "From: charles@example.net",
  "Subject: Second",
  "Date: Wed, 06 Mar 2024 10:00:00 +0000",
  "",
  "The second message.",
  ""
].join("\n")

/** A multipart nested `depth` levels deep. */
const nestedMultipart = (depth: number) => {
  let body = "Content-Type: text/plain\r\n\r\ninnermost text\r\n"
  for (let i = depth; i > 0; i--) {
    body = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${body}--b${i}--\r\n`
  }
  return `From: a@example.org\r\nSubject: deep\r\nMIME-Version: 1.0\r\n${body}`
}

/** A message forwarded inside a message `depth` times. */
const nestedMessages = (depth: number) => {
  let inner = "From: a@example.org\r\nSubject: innermost\r\n\r\nthe innermost message\r\n"
  for (let i = 0; i < depth; i++) {
    inner = `From: a@example.org\r\nSubject: level ${i}\r\nMIME-Version: 1.0\r\nContent-Type: message/rfc822\r\n\r\n${inner}`
  }
  return inner
}

const manyParts = (parts: number) =>
  "From: a@example.org\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"p\"\r\n\r\n" +
  Array.from({ length: parts }, (_, i) => `--p\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`).join("") +
  "--p--\r\n"

describe("e-mail detection and mailbox splitting", () => {
  it("a message or a mailbox is recognised by its header lines when the name has no extension", () => {
    expect(detect("message", enc.encode(message))).toEqual({ _tag: "format", format: "email" })
    expect(detect("inbox", enc.encode(mbox))).toEqual({ _tag: "format", format: "mbox" })
    expect(detect("x", enc.encode(message), "message/rfc822")).toEqual({ _tag: "format", format: "email" })
    expect(detect("notes", enc.encode("Subject: one header only\n\nplain text"))).toEqual({ _tag: "format", format: "txt" })
    expect(detect("notes", enc.encode("Dear Ada,\nFrom: me\nTo: you\n\nplain text"))).toEqual({ _tag: "format", format: "txt" })
    expect(detect("notes.txt", enc.encode(message))).toEqual({ _tag: "format", format: "txt" })
  })

  it("mboxrd: split on From lines, one > removed from escaped From lines", () => {
    const parts = splitMbox(mbox)
    expect(parts.length).toBe(2)
    expect(parts[0]).toContain("\nFrom the archive: an escaped line.")
    expect(parts[1]!.startsWith("From: charles@example.net")).toBe(true)
  })
})

layer(LocalFiles.layer({ timeout: "60 seconds" }))("e-mail through the Upload service", (it) => {
  it.effect(".eml: headers as title and properties, the text body, attachments listed and read as pages of their own", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extract(file("figures.eml", message), { page_based: true })
      expect([r.type, r.format]).toEqual(["text", "email"])
      expect(r.pages?.map((p) => p.name)).toEqual(["Quarterly figures – March", "hours.csv", "notes.txt"])
      expect(r.pages?.[0]?.content).toBe(
        "From: Ada Lovelace <ada@example.org>\n" +
          "To: Charles Babbage <charles@example.net>, team@example.net\n" +
          "Cc: Françoise <francoise@example.net>\n" +
          "Date: Tue, 05 Mar 2024 09:30:00 +0000\n" +
          "Subject: Quarterly figures – March\n\n" +
          "Dear Charles,\n\nthe engine ran 12 – 14 hours this week. Figures attached.\n\nAda\n\n" +
          "Attachments: hours.csv (31 B), notes.txt (29 B), wheel.png (12 B)"
      )
      expect(r.pages?.[1]?.content).toContain("| Monday | 12 |")
      expect(r.pages?.[2]?.content).toBe("The mill wheel needs oiling.")
      const chunks = yield* upload.extractChunks(file("figures.eml", message))
      const meta = chunks.data.data.metadata
      expect(meta.title).toBe("Quarterly figures – March")
      expect(meta.properties).toEqual({
        from: "Ada Lovelace <ada@example.org>",
        to: "Charles Babbage <charles@example.net>, team@example.net",
        cc: "Françoise <francoise@example.net>",
        date: "2024-03-05T09:30:00.000Z",
        attachments: "3"
      })
      // the small pages share one chunk, which starts at the message
      expect(chunks.data.data.chunks.map((c) => c.from_page)).toEqual([1])
      const all = chunks.data.data.chunks.map((c) => c.content).join("\n")
      expect(all).toContain("| Tuesday | 14 |")
      expect(all).toContain("The mill wheel needs oiling.")
    }))

  it.effect("an HTML-only message is read as Markdown; without an extension it is still an e-mail", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      for (const f of [file("news.eml", htmlOnly), file("news", htmlOnly), file("upload.bin", htmlOnly, "message/rfc822")]) {
        const r = yield* upload.extract(f)
        expect(r.format).toBe("email")
        expect(r.content).toBe(
          "From: news@example.org\nTo: reader@example.net\nDate: Mon, 1 Apr 2024 08:00:00 +0200\nSubject: Spring newsletter\n\n" +
            "# Spring\n\n- Café opens\n- Garden tour"
        )
      }
    }))

  it.effect("an attachment that is damaged is listed with a warning, one in a format not read is only listed; the same bytes are read once", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const part = (name: string, type: string, body: string) =>
        `--m\r\nContent-Type: ${type}; name="${name}"\r\nContent-Disposition: attachment; filename="${name}"\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64(body)}\r\n`
      const text = "From: a@example.org\r\nSubject: files\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"m\"\r\n\r\n" +
        "--m\r\nContent-Type: text/plain\r\n\r\nSee the files.\r\n" +
        part("broken.pdf", "application/pdf", "%PDF-1.7\nthis is no PDF body") +
        part("archive.zip", "application/zip", "PK\u0005\u0006" + "\u0000".repeat(18)) +
        part("a.txt", "text/plain", "same words") +
        part("b.txt", "text/plain", "same words") +
        "--m--\r\n"
      const r = yield* upload.extract(file("files.eml", text), { page_based: true })
      expect(r.pages?.map((p) => p.name)).toEqual(["files", "a.txt"])
      expect(r.pages?.[0]?.content).toContain("Attachments: broken.pdf (")
      expect(r.pages?.[0]?.content).toContain("archive.zip (22 B)")
      expect(r.warnings).toEqual(["attachment broken.pdf was listed, not read (corrupt)"])
    }))

  it.effect("a calendar invitation: its unnamed text/calendar alternative is not listed beside the same .ics attached; alone, it is", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const ics = "BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nSUMMARY:Mill inspection\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
      const invitation = (attached: boolean) =>
        "From: a@example.org\r\nSubject: Invitation\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"mix\"\r\n\r\n" +
        "--mix\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n" +
        "--alt\r\nContent-Type: text/plain\r\n\r\nYou are invited.\r\n" +
        "--alt\r\nContent-Type: text/calendar; method=REQUEST\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(ics) + "\r\n--alt--\r\n" +
        (attached
          ? "--mix\r\nContent-Type: application/ics; name=invite.ics\r\nContent-Disposition: attachment; filename=invite.ics\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(ics) + "\r\n"
          : "") +
        "--mix--\r\n"
      const both = yield* upload.extract(file("invite.eml", invitation(true)), { page_based: true })
      expect(both.pages?.map((p) => p.name)).toEqual(["Invitation", "invite.ics"])
      // one attachment listed (its size as decoded: line ends may be normalised)
      expect(both.pages?.[0]?.content).toMatch(/^From: a@example\.org\nSubject: Invitation\n\nYou are invited\.\n\nAttachments: invite\.ics \(\d+ B\)$/)
      expect(both.pages?.[1]?.content).toContain("SUMMARY:Mill inspection")
      const alone = yield* upload.extract(file("invite.eml", invitation(false)), { page_based: true })
      expect(alone.pages?.map((p) => p.name)).toEqual(["Invitation", "attachment-1.ics"])
    }))

  it.effect("as Nodemailer writes it: a Watch rendering of the body is no attachment; an image in multipart/related is listed when marked as an attachment, not when the HTML shows it", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const png = "\u0089PNG\r\n\u001a\n" + "\u0000".repeat(8)
      const text = "From: a@example.org\r\nSubject: related\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n" +
        "--alt\r\nContent-Type: text/plain\r\n\r\nHello to myself!\r\n" +
        "--alt\r\nContent-Type: text/watch-html\r\n\r\n<b>Hello</b> to myself\r\n" +
        "--alt\r\nContent-Type: multipart/related; type=\"text/html\"; boundary=\"rel\"\r\n\r\n" +
        "--rel\r\nContent-Type: text/html\r\n\r\n<p>Hello to myself! <img src=\"cid:logo@x\"></p>\r\n" +
        "--rel\r\nContent-Type: image/png; name=logo.png\r\nContent-ID: <logo@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(png) + "\r\n" +
        "--rel\r\nContent-Type: image/png; name=photo.png\r\nContent-Disposition: attachment; filename=photo.png\r\nContent-ID: <photo@x>\r\n" +
        "Content-Transfer-Encoding: base64\r\n\r\n" + b64(png) + "\r\n--rel--\r\n--alt--\r\n"
      const r = yield* upload.extract(file("related.eml", text), { page_based: true })
      expect(r.pages?.map((p) => p.content)).toEqual([
        "From: a@example.org\nSubject: related\n\nHello to myself!\n\nAttachments: photo.png (17 B)"
      ])
    }))

  it.effect(".mbox: one page per message, named by subject and date", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extract(file("inbox.mbox", mbox), { page_based: true })
      expect([r.type, r.format]).toEqual(["text", "mbox"])
      expect(r.pages?.map((p) => p.name)).toEqual(["First (2024-03-05)", "Second (2024-03-06)"])
      expect(r.pages?.[0]?.content).toBe(
        "From: ada@example.org\nDate: Tue, 05 Mar 2024 09:30:00 +0000\nSubject: First\n\nThe first message.\nFrom the archive: an escaped line."
      )
      expect(r.pages?.[1]?.content).toContain("The second message.")
    }))

  it.effect("hostile messages: too many MIME parts, too deep a MIME nesting, messages nested too deep, too many messages", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const ok = yield* upload.extract(file("parts.eml", manyParts(emailLimits.parts)))
      expect(ok.content).toContain(`part ${emailLimits.parts - 1}`)
      const cases = [
        file("parts.eml", manyParts(emailLimits.parts + 1)),
        file("deep.eml", nestedMultipart(emailLimits.mimeDepth + 2)),
        file("forwarded.eml", nestedMessages(emailLimits.messageDepth + 2)),
        file("big.mbox", "From a@b Thu Jan  1 00:00:00 1970\nSubject: x\n\nx\n".repeat(emailLimits.mboxMessages + 1))
      ]
      for (const f of cases) {
        const e = yield* Effect.flip(upload.extract(f))
        expect([f.name, e._tag, e._tag === "ExtractionError" && e.reason]).toEqual([f.name, "ExtractionError", "limit_exceeded"])
      }
      const shallow = yield* upload.extract(file("forwarded.eml", nestedMessages(2)))
      expect(shallow.content).toContain("the innermost message")
    }))
})
