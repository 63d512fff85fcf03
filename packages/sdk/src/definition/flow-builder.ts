import { assertJson, type DagArg, type DagNode, type FlowDag } from "@ax/store";
import type { AnyTask } from "./task.js";
import { Ref } from "./ref.js";
import { AxNotJsonError, AxDefinitionError } from "@ax/common";

/** Records the nodes a flow body creates; one per `ax.flow()` call, alive only while its body runs. */
export class FlowBuilder {
  private readonly nodes: DagNode[] = [];
  private readonly uses = new Map<string, number>();
  readonly tasks = new Map<string, AnyTask>();

  constructor(readonly flow: string) {}

  addNode(task: AnyTask, args: unknown[]): Ref {
    const known = this.tasks.get(task.taskName);
    if (known && known !== task) {
      throw new AxDefinitionError(
        `flow "${this.flow}" uses two different tasks named "${task.taskName}"; task names must be unique (rename one).`,
      );
    }
    this.tasks.set(task.taskName, task);
    const count = (this.uses.get(task.taskName) ?? 0) + 1;
    this.uses.set(task.taskName, count);
    const key = count === 1 ? task.taskName : `${task.taskName}#${count}`;
    const dagArgs = args.map((arg, i) => this.toDagArg(task.taskName, arg, i));
    const upstream = [...new Set(dagArgs.flatMap((a) => (a.kind === "node" ? [a.key] : [])))];
    for (const up of upstream) this.nodes.find((n) => n.key === up)!.downstream.push(key);
    this.nodes.push({ key, task: task.taskName, queue: task.options.queue, args: dagArgs, upstream, downstream: [] });
    return new Ref({ node: key }, this);
  }

  private toDagArg(task: string, arg: unknown, index: number): DagArg {
    if (arg instanceof Ref) {
      if (arg.builder !== this) {
        throw new AxDefinitionError(
          `flow "${this.flow}": argument ${index + 1} of "${task}" is a Ref from another flow; a flow can only use its own input and tasks.`,
        );
      }
      return arg.source === "input" ? { kind: "input" } : { kind: "node", key: arg.source.node };
    }
    const nested = refInside(arg, "$");
    if (nested) {
      throw new AxDefinitionError(
        `flow "${this.flow}": argument ${index + 1} of "${task}" holds a Ref at ${nested}. A Ref has no value until the run, so it must be ` +
          `an argument of its own: pass it separately (${task}(input, invoice)) and build the object inside the task.`,
      );
    }
    if (arg === undefined) {
      throw new AxDefinitionError(
        `flow "${this.flow}": argument ${index + 1} of "${task}" is undefined. If it reads a field of a Ref (input.amount, or of a task's result), ` +
          "a Ref has no fields while the flow is traced: pass the Ref itself and read the field inside the task.",
      );
    }
    try {
      // A constant is passed as written in the body: a Date would arrive as a string.
      assertJson(arg, `argument ${index + 1} of "${task}"`, { exact: true });
    } catch (error) {
      if (error instanceof AxNotJsonError) {
        throw new AxDefinitionError(
          `flow "${this.flow}": ${error.message.replace(/\.$/, "")}, or a Ref (the flow input or another task's result).`,
        );
      }
      throw error;
    }
    return { kind: "const", value: arg };
  }

  build(): FlowDag {
    if (this.nodes.length === 0) {
      throw new AxDefinitionError(`flow "${this.flow}" has no tasks: call at least one task inside its body.`);
    }
    return { flow: this.flow, nodes: this.nodes };
  }
}

let current: FlowBuilder | null = null;

export function currentBuilder(): FlowBuilder | null {
  return current;
}

/** Runs a flow body with `builder` receiving its task calls. */
export function trace(builder: FlowBuilder, body: () => unknown): void {
  if (current)
    throw new AxDefinitionError(
      `flow "${builder.flow}" was defined inside the body of flow "${current.flow}"; define flows at module top level.`,
    );
  current = builder;
  try {
    let returned: unknown;
    try {
      returned = body();
    } catch (error) {
      if (error instanceof AxDefinitionError) throw error;
      throw new AxDefinitionError(
        `the body of flow "${builder.flow}" threw while the flow was defined: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}; a flow body runs once, at import, to declare the graph: move code that can fail into a task`,
        { cause: error },
      );
    }
    if (returned && typeof (returned as Promise<unknown>).then === "function") {
      // Task calls after its first await reject that promise; the error below already reports it.
      (returned as Promise<unknown>).then(undefined, () => {});
      throw new AxDefinitionError(
        `the body of flow "${builder.flow}" is async; it must be synchronous because it only declares the graph (tasks run later, in workers).`,
      );
    }
  } finally {
    current = null;
  }
}

/** The JSON path of the first Ref inside an array or plain object argument, if any. */
function refInside(value: unknown, path: string, seen = new Set<object>()): string | undefined {
  if (value instanceof Ref) return path === "$" ? undefined : path;
  // A circular value is refused by the JSON check that follows; it is walked once here.
  if (value === null || typeof value !== "object" || seen.has(value)) return undefined;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = refInside(value[i], `${path}[${i}]`, seen);
      if (found) return found;
    }
    return undefined;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  for (const [key, field] of Object.entries(value)) {
    const found = refInside(field, `${path}.${key}`, seen);
    if (found) return found;
  }
  return undefined;
}
