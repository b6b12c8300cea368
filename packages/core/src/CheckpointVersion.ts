/**
 * Versioned records: what a run records carries the version of the schema
 * that wrote it, and an app that changes a schema says how the records of
 * older versions reach the new one (migrations, run when a record is read).
 *
 * Three schemas write a run's records: agentloop's own for an `AgentLoop`
 * run's entries (`AgentCheckpoint.version`), a step program's state (the
 * `stateVersioning` option of `Step.execute`) and each tool's output (the
 * `outputVersioning` option of `Tool.make`). A record written before records
 * carried a version is read as version 1, the first.
 *
 * A migration is a `Schema` that decodes a value as version `from` encoded it
 * into the value as version `to` encodes it: a `Schema.decodeTo` between the
 * two versions' schemas, say. Reading a record of an older version runs the
 * migrations from its version, one after another, up to the current one; a
 * record that none reaches (no migration from its version, or one written by
 * a newer version of the app) fails with {@link CheckpointVersionMismatch}
 * before the run goes on, naming both versions.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/**
 * A schema version: an integer from 1.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Version = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/**
 * The version of a record written before records carried one.
 *
 * @since 0.2.0
 * @category constants
 */
export const first = 1

/**
 * A record was written at version `recorded`, and no migration leads from it
 * to version `supported`, the one this app reads: `subject` says which
 * record (a run's entries, a program's state, a tool's output).
 *
 * @since 0.2.0
 * @category errors
 */
export class CheckpointVersionMismatch extends Schema.TaggedError<CheckpointVersionMismatch>()(
  "CheckpointVersionMismatch",
  {
    subject: Schema.String,
    recorded: Schema.Finite,
    supported: Schema.Finite
  }
) {
  override get message() {
    return `${this.subject} was recorded at version ${this.recorded}, and this app reads version ${this.supported}: ` +
      `no migration leads from version ${this.recorded} to version ${this.supported}`
  }
}

/**
 * How a value recorded at version `from` becomes the value of version `to`:
 * `schema` decodes the first's encoded form into the second's (only its
 * decoding runs).
 *
 * @since 0.2.0
 * @category models
 */
export interface Migration {
  readonly from: number
  readonly to: number
  readonly schema: Schema.Codec<unknown, unknown>
}

/**
 * A migration from version `from` to version `to`.
 *
 * @example
 * ```ts
 * import { CheckpointVersion } from "@agentloop/core"
 * import { Schema, SchemaTransformation } from "effect"
 *
 * const V1 = Schema.Struct({ celsius: Schema.Number })
 * const V2 = Schema.Struct({ degrees: Schema.Number, unit: Schema.Literals(["C", "F"]) })
 *
 * const migration = CheckpointVersion.migration(
 *   1,
 *   2,
 *   V1.pipe(Schema.decodeTo(
 *     V2,
 *     SchemaTransformation.transform({
 *       decode: ({ celsius }): typeof V2.Type => ({ degrees: celsius, unit: "C" }),
 *       encode: ({ degrees }) => ({ celsius: degrees })
 *     })
 *   ))
 * )
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const migration = (from: number, to: number, schema: Schema.Codec<unknown, unknown>): Migration => ({
  from,
  to,
  schema
})

/**
 * The version of a schema an app writes and reads, and the migrations that
 * bring the records of other versions to it (none: only records of
 * `version` are read).
 *
 * @since 0.2.0
 * @category models
 */
export interface Versioning {
  readonly version: number
  readonly migrations?: ReadonlyArray<Migration> | undefined
}

const isVersion = Schema.is(Version)

/**
 * Whether `value` is a {@link Versioning}: a version (an integer from 1), and
 * migrations between versions, each with a `Schema`. A run checks its
 * options' with it before anything runs.
 *
 * @since 0.2.0
 * @category guards
 */
export const isVersioning = (value: unknown): value is Versioning =>
  Predicate.hasProperty(value, "version") && isVersion(value.version) &&
  (!Predicate.hasProperty(value, "migrations") || value.migrations === undefined ||
    (Array.isArray(value.migrations) &&
      value.migrations.every((migration: unknown) =>
        Predicate.hasProperty(migration, "from") && isVersion(migration.from) &&
        Predicate.hasProperty(migration, "to") && isVersion(migration.to) &&
        Predicate.hasProperty(migration, "schema") && Schema.isSchema(migration.schema)
      )))

/**
 * `value`, recorded at version `recorded`, as the current version of
 * `versioning` (version 1 without one) reads it: the migrations run from the
 * recorded version, one after another. Fails with
 * {@link CheckpointVersionMismatch} when none leads to the current version,
 * and with the migration's `SchemaError` when one does not decode the value.
 *
 * @since 0.2.0
 * @category migrating
 */
export const migrate = (options: {
  readonly subject: string
  readonly versioning: Versioning | undefined
  readonly recorded: number
  readonly value: unknown
}): Effect.Effect<unknown, CheckpointVersionMismatch | Schema.SchemaError> =>
  Effect.gen(function*() {
    const supported = options.versioning?.version ?? first
    const migrations = options.versioning?.migrations ?? []
    const visited = new Set<number>()
    let version = options.recorded
    let value = options.value
    while (version !== supported) {
      const step = visited.has(version) ? undefined : migrations.find((migration) => migration.from === version)
      if (step === undefined) {
        return yield* new CheckpointVersionMismatch({
          subject: options.subject,
          recorded: options.recorded,
          supported
        })
      }
      visited.add(version)
      value = yield* Schema.decodeUnknownEffect(step.schema)(value)
      version = step.to
    }
    return value
  })

const Json = Schema.fromJsonString(Schema.Unknown)

const Envelope = Schema.Struct({ v: Schema.optionalKey(Schema.Finite) })

/**
 * A record's text as `parse` reads it: `v`, the version of the schema that
 * wrote it, beside the record's own fields.
 *
 * @since 0.2.0
 * @category records
 */
export const format = (version: number, json: unknown): string => JSON.stringify(Object.assign({ v: version }, json))

/**
 * The JSON of a record's text, and the version that wrote it ({@link first}
 * for a record that names none, written before records carried one).
 *
 * @since 0.2.0
 * @category records
 */
export const parse = (
  text: string
): Effect.Effect<{ readonly version: number; readonly json: unknown }, Schema.SchemaError> =>
  Effect.flatMap(
    Schema.decodeUnknownEffect(Json)(text),
    (json) =>
      Effect.map(Schema.decodeUnknownEffect(Envelope)(json), (envelope) => ({ version: envelope.v ?? first, json }))
  )
