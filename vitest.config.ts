import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = (file: string) => fileURLToPath(new URL(`./src/${file}`, import.meta.url))

export default defineConfig({
  // examples import the package by name, as an application does: here it is the source
  resolve: {
    alias: [
      { find: /^effect-rag$/, replacement: src("index.ts") },
      { find: /^effect-rag\/(onnx|use-lite|queue|postgres|ai|testing)$/, replacement: src("$1.ts") }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } }
  }
})
