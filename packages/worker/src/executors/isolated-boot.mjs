// Child entry of the thread and process executors: task modules are TypeScript, so register
// tsx in this thread or process before loading anything else. Plain JS so Node can start it as is.
import { register } from "tsx/esm/api";

register();
await import("./isolated-entry.ts");
