/** Errors of cluster-wide limits (task concurrency, rate limits, pools, max_concurrency). */

/**
 * A limit that no permit could ever pass: a weight over the capacity, a rate of zero, a limit
 * named twice in one request. Refused at once instead of waiting forever.
 */
export class AxLimitError extends Error {
  override name = "AxLimitError";
  constructor(
    readonly label: string,
    readonly key: string,
    problem: string,
  ) {
    super(`${label} (key ${key}): ${problem}`);
  }
}
