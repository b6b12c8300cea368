/**
 * What went wrong in a call to the platform (the file system): a
 * `PlatformError`'s reason, by its tag.
 *
 * @internal
 */

/** Whether `error` is a platform error whose reason is `reason` (`NotFound`, `AlreadyExists`…). */
export const isReason = (reason: string) => (error: unknown): boolean =>
  typeof error === "object" && error !== null && "reason" in error && typeof error.reason === "object" &&
  error.reason !== null && "_tag" in error.reason && error.reason._tag === reason
