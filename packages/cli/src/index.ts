export { main } from "./main.js";
export { renderRun } from "./render-run.js";
export { loadFlows } from "./load-entry.js";
