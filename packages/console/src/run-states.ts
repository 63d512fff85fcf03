/** A run in one of these has ended. */
export const FINAL_RUN = ["success", "failed", "cancelled"];
/** A node in one of these has had every attempt it will get. */
export const FINAL_NODE = [...FINAL_RUN, "skipped"];
