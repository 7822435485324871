/**
 * Filters and read scopes of the in-memory adapter: one predicate over a chunk, applied before
 * ranking and the limit, after the filter and the scope's access entries are validated.
 */
import * as Effect from "effect/Effect"
import * as Filters from "../filter.js"
import {
  type Chunk,
  checkAccess,
  type CollectionSpec,
  documentIdField,
  type Filter,
  InvalidInput,
  readable,
  type ReadScope,
  type Scalar
} from "../../VectorStore.js"

/** Which chunks a read may see. */
export type Accept = (chunk: Chunk) => boolean

/** A chunk's value of a filter field (`documentId` or a metadata field). */
const fieldOf = (chunk: Chunk) => (field: string): Scalar | undefined =>
  field === documentIdField ? chunk.documentId : chunk.metadata?.[field]

/** The predicate of a filter and a read scope; `InvalidInput` for an invalid one. */
export const accepting = (
  spec: CollectionSpec,
  filter: Filter | undefined,
  scope?: ReadScope | undefined
): Effect.Effect<Accept, InvalidInput> => {
  const problem = filter === undefined ? undefined : Filters.validate(spec, filter)
  if (problem !== undefined) return Effect.fail(new InvalidInput({ message: problem }))
  const scoped = scope !== undefined && scope._tag === "Entries"
  const scopeProblem = scoped ? checkAccess(scope.entries) : undefined
  if (scopeProblem !== undefined) return Effect.fail(new InvalidInput({ message: scopeProblem }))
  return Effect.succeed((c: Chunk) =>
    (!scoped || readable(scope, c.access)) && (filter === undefined || Filters.matches(filter, fieldOf(c)))
  )
}
