import { processWide } from "@ax/common";

/**
 * Every task function defined in this process, by name, with the module that defined it. A
 * thread or process executor imports that module in its child and finds the function here,
 * whether or not the module exports the task.
 */
interface DefinedTask {
  fn: (...args: never[]) => unknown;
  moduleUrl: string | undefined;
}

const defined = processWide("tasks", () => new Map<string, DefinedTask[]>());

export function recordTaskDefinition(name: string, fn: DefinedTask["fn"], moduleUrl: string | undefined): void {
  const list = defined.get(name) ?? [];
  list.push({ fn, moduleUrl });
  defined.set(name, list);
}

/** The function of task `name`, preferring the one `moduleUrl` defined when a name is reused. */
export function findTaskDefinition(name: string, moduleUrl: string): DefinedTask["fn"] | undefined {
  const list = defined.get(name) ?? [];
  return (list.find((t) => t.moduleUrl === moduleUrl) ?? list[0])?.fn;
}
