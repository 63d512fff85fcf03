/**
 * The flow tracer against arbitrary DAG shapes, constants, names and options: a valid definition
 * traces into exactly the graph its body describes; anything else is an AxDefinitionError, never
 * another exception.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ax, AxDefinitionError, type Flow, type Ref, type Task } from "ax-scheduler";
import { hostileJson, hostileString, storableJson } from "../../helpers/arbitraries.js";

const TASKS = [0, 1, 2, 3].map((i) => ax.task({ name: `prop_task_${i}` }, (...args: unknown[]) => args));

type ArgSpec = { kind: "input" } | { kind: "node"; index: number } | { kind: "const"; value: unknown };
interface NodeSpec {
  task: number;
  args: ArgSpec[];
}

const argSpec = (constant: fc.Arbitrary<unknown>): fc.Arbitrary<ArgSpec> =>
  fc.oneof(
    fc.constant({ kind: "input" as const }),
    fc.record({ kind: fc.constant("node" as const), index: fc.nat() }),
    fc.record({ kind: fc.constant("const" as const), value: constant }),
  );
const shapeWith = (constant: fc.Arbitrary<unknown>) =>
  fc.array(fc.record({ task: fc.nat({ max: TASKS.length - 1 }), args: fc.array(argSpec(constant), { maxLength: 4 }) }), {
    minLength: 1,
    maxLength: 12,
  });
const dagSpec = shapeWith(storableJson);

/** Node `i` may only take earlier nodes' results, so every spec is acyclic by construction. */
function argsOf(spec: NodeSpec[], i: number, input: Ref, refs: Ref[]): unknown[] {
  return spec[i]!.args.map((a) => (a.kind === "input" ? input : a.kind === "const" ? a.value : i === 0 ? input : refs[a.index % i]));
}

function traceSpec(name: string, spec: NodeSpec[], poison?: { node: number; arg: (input: Ref) => unknown }): Flow {
  return ax.flow({ name }, (input) => {
    const refs: Ref[] = [];
    spec.forEach((node, i) => {
      const args = argsOf(spec, i, input, refs);
      if (poison?.node === i % spec.length) args.splice(args.length === 0 ? 0 : i % args.length, 0, poison.arg(input));
      refs.push((TASKS[node.task] as Task<unknown[], unknown>)(...args));
    });
  });
}

/** Each node's key as the tracer must assign it: the task name, then name#2, name#3 … */
function expectedKeys(spec: NodeSpec[]): string[] {
  const uses = new Map<number, number>();
  return spec.map((node) => {
    const count = (uses.get(node.task) ?? 0) + 1;
    uses.set(node.task, count);
    return count === 1 ? `prop_task_${node.task}` : `prop_task_${node.task}#${count}`;
  });
}

class Money {
  constructor(readonly cents: number) {}
}

/** Arguments no flow may record: not JSON, or a ref that is not a direct argument of this flow. */
const poisons = fc.constantFrom<(input: Ref) => unknown>(
  () => () => 1,
  () => new Date(0),
  () => undefined,
  () => Number.NaN,
  () => Number.POSITIVE_INFINITY,
  () => 10n,
  () => Symbol("s"),
  () => new Map([["a", 1]]),
  () => new Money(5),
  () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    return loop;
  },
  (input) => ({ nested: input }),
  (input) => [1, [input]],
  () => ({ deep: { missing: undefined } }),
  () => refFromAnotherFlow(),
);

let leaked: Ref | undefined;
function refFromAnotherFlow(): Ref {
  ax.flow({ name: "prop_leaky" }, (input) => {
    leaked = input;
    TASKS[0]!(input);
  });
  return leaked!;
}

function refusedAsDefinition(error: unknown): boolean {
  return error instanceof AxDefinitionError && error.message.length > 0;
}

describe("flow tracing, property-based", () => {
  it("traces every acyclic shape into exactly its nodes, keys, edges and constants, deterministically", () => {
    fc.assert(
      fc.property(dagSpec, (spec) => {
        const flow = traceSpec("prop_flow", spec);
        const keys = expectedKeys(spec);
        expect(flow.dag.nodes.map((n) => n.key)).toEqual(keys);
        spec.forEach((node, i) => {
          const traced = flow.dag.nodes[i]!;
          const args = node.args.map((a) =>
            a.kind === "const"
              ? { kind: "const", value: a.value }
              : a.kind === "node" && i > 0
                ? { kind: "node", key: keys[a.index % i] }
                : { kind: "input" },
          );
          expect(traced.args).toEqual(args);
          expect(traced.upstream).toEqual([...new Set(args.flatMap((a) => (a.kind === "node" ? [a.key as string] : [])))]);
          for (const up of traced.upstream) expect(flow.dag.nodes.find((n) => n.key === up)!.downstream).toContain(traced.key);
        });
        const edges = flow.dag.nodes.reduce((sum, n) => sum + n.upstream.length, 0);
        expect(flow.dag.nodes.reduce((sum, n) => sum + n.downstream.length, 0)).toBe(edges);
        expect([...flow.tasks.keys()].sort()).toEqual([...new Set(spec.map((n) => `prop_task_${n.task}`))].sort());
        expect(JSON.stringify(traceSpec("prop_flow", spec).dag)).toBe(JSON.stringify(flow.dag));
      }),
      { numRuns: 300 },
    );
  });

  it("traces constants with any unicode (NUL, lone surrogates) or refuses them with AxDefinitionError", () => {
    fc.assert(
      fc.property(shapeWith(hostileJson), (spec) => {
        try {
          expect(traceSpec("prop_unicode", spec).dag.nodes).toHaveLength(spec.length);
        } catch (error) {
          expect(refusedAsDefinition(error), String(error)).toBe(true);
          expect((error as Error).message).toMatch(/flow "prop_unicode"/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("refuses any non-JSON or foreign argument anywhere in any shape with AxDefinitionError", () => {
    fc.assert(
      fc.property(dagSpec, fc.nat(), poisons, (spec, node, arg) => {
        let thrown: unknown;
        try {
          traceSpec("prop_poisoned", spec, { node: node % spec.length, arg });
        } catch (error) {
          thrown = error;
        }
        expect(refusedAsDefinition(thrown), String(thrown)).toBe(true);
        expect((thrown as Error).message).toMatch(/flow "prop_poisoned"/);
      }),
      { numRuns: 300 },
    );
  });

  it("accepts a task or flow name exactly when it is a valid name, and refuses the rest clearly", () => {
    const valid = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
    fc.assert(
      fc.property(fc.oneof(hostileString, fc.stringMatching(valid)), (name) => {
        for (const define of [() => ax.task({ name }, () => 1), () => ax.flow({ name }, (input) => void TASKS[0]!(input))]) {
          if (valid.test(name)) expect(define).not.toThrow();
          else expect(define).toThrow(AxDefinitionError);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("answers arbitrary option objects with a definition or AxDefinitionError, nothing else", () => {
    const optionKeys = fc.constantFrom(
      "retries",
      "timeout",
      "retryBackoff",
      "backoff",
      "jitter",
      "queue",
      "executor",
      "pool",
      "rateLimit",
      "resources",
      "onFailure",
    );
    const options = fc.dictionary(fc.oneof(optionKeys, hostileString), fc.oneof(fc.anything(), fc.double(), hostileString), { maxKeys: 4 });
    fc.assert(
      fc.property(
        options,
        fc.dictionary(
          fc.oneof(fc.constantFrom("schedule", "overlap", "maxConcurrentRuns", "idempotencyKey"), hostileString),
          fc.anything(),
          { maxKeys: 3 },
        ),
        (task, flow) => {
          for (const define of [
            () => ax.task({ ...task, name: "prop_options" }, () => 1),
            () => ax.flow({ ...flow, name: "prop_options_flow" }, (input) => void TASKS[0]!(input)),
          ]) {
            try {
              define();
            } catch (error) {
              expect(refusedAsDefinition(error), String(error)).toBe(true);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
