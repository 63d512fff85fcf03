import type { Client } from "ax-scheduler";

/**
 * What `ax audit`, `ax prune` and `ax alerts history|mutes|mute|unmute` need: a `Client` on the store, or the
 * HTTP API of the `ax dev` holding an embedded data directory (every method here has a route there).
 */
export type AdminApi = Pick<Client, "audit" | "listAlerts" | "listAlertMutes" | "muteAlerts" | "unmuteAlerts" | "prune">;
