/** A run in one of these has ended. */
export const FINAL_RUN = ["success", "failed", "cancelled"];
/** The runs still in flight, as the API's status filter takes several states: comma-separated. */
export const UNFINISHED_RUNS = "pending,running";
/** A node in one of these has had every attempt it will get. */
export const FINAL_NODE = [...FINAL_RUN, "skipped"];
