#!/usr/bin/env node
// Entry modules are TypeScript: load them through tsx, then hand over to the CLI.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/main.ts");
await main(process.argv);
