import { describe, expect, it } from "vitest";
import { dagHash, defineFlow } from "./flow.js";
import type { Ref } from "./ref.js";
import { defineTask } from "./task.js";
import { AxDefinitionError } from "@ax/common";

interface Event {
  id: string;
}

const parse = defineTask({ name: "parse_payment" }, (event: { id: string }) => ({ id: event.id }));
const invoice = defineTask({ name: "create_invoice", queue: "billing" }, (payment: { id: string }) => ({ invoice: payment.id }));
const notify = defineTask({ name: "send_notification" }, (_payment: unknown, _invoice: unknown, _template: string) => undefined);

describe("tracing a flow body into a DAG", () => {
  it("records nodes, edges, constants and queues; the fan-in waits on both upstreams", () => {
    const flow = defineFlow<Event>({ name: "order" }, (event) => {
      const payment = parse(event);
      notify(payment, invoice(payment), "invoice_issued");
    });
    expect(flow.dag.nodes).toEqual([
      {
        key: "parse_payment",
        task: "parse_payment",
        queue: "default",
        args: [{ kind: "input" }],
        upstream: [],
        downstream: ["create_invoice", "send_notification"],
      },
      {
        key: "create_invoice",
        task: "create_invoice",
        queue: "billing",
        args: [{ kind: "node", key: "parse_payment" }],
        upstream: ["parse_payment"],
        downstream: ["send_notification"],
      },
      {
        key: "send_notification",
        task: "send_notification",
        queue: "default",
        args: [
          { kind: "node", key: "parse_payment" },
          { kind: "node", key: "create_invoice" },
          { kind: "const", value: "invoice_issued" },
        ],
        upstream: ["parse_payment", "create_invoice"],
        downstream: [],
      },
    ]);
    expect([...flow.tasks.keys()]).toEqual(["parse_payment", "create_invoice", "send_notification"]);
  });

  it("keys a task used twice name, name#2, and counts one upstream once however often it is passed", () => {
    const flow = defineFlow<Event>({ name: "twice" }, (event) => {
      const a = parse(event);
      const b = parse(event);
      notify(a, a, "x");
      notify(b, a, "y");
    });
    expect(flow.dag.nodes.map((n) => [n.key, n.upstream])).toEqual([
      ["parse_payment", []],
      ["parse_payment#2", []],
      ["send_notification", ["parse_payment"]],
      ["send_notification#2", ["parse_payment#2", "parse_payment"]],
    ]);
  });

  it("gives a changed DAG a new hash and the same DAG the same one", () => {
    const body = (event: Ref<Event>) => void invoice(parse(event));
    const one = defineFlow<Event>({ name: "h" }, body);
    const same = defineFlow<Event>({ name: "h" }, body);
    const other = defineFlow<Event>({ name: "h" }, (event) => void parse(event));
    expect(dagHash(one.dag)).toBe(dagHash(same.dag));
    expect(dagHash(one.dag)).not.toBe(dagHash(other.dag));
  });

  it("refuses a Ref from another flow and an empty body", () => {
    let leaked: Ref<{ id: string }> | undefined;
    defineFlow<Event>({ name: "first" }, (event) => {
      leaked = parse(event);
    });
    expect(() => defineFlow({ name: "second" }, () => void invoice(leaked!))).toThrow(AxDefinitionError);
    expect(() => defineFlow({ name: "empty" }, () => undefined)).toThrow(/has no tasks/);
  });

  it("types the flow input: untyped it passes to any task, typed it is checked against the task's parameters", () => {
    expect(defineFlow({ name: "untyped" }, (event) => void invoice(parse(event))).dag.nodes).toHaveLength(2);
    const typed = defineFlow<{ amount: number }>({ name: "typed" }, (event) => {
      // @ts-expect-error parse_payment needs { id: string }, the flow's input is { amount: number }
      parse(event);
    });
    expect(typed.dag.nodes).toHaveLength(1);
  });

  it("calls the function directly with task.run, outside any flow", async () => {
    await expect(parse.run({ id: "p1" })).resolves.toEqual({ id: "p1" });
    expect(() => parse({ id: "p1" })).toThrow(/called outside a flow body/);
  });

  it("refuses task.run inside a flow body without running the function: a body runs once, at definition", () => {
    let ran = 0;
    const charge = defineTask({ name: "run_in_body_charge" }, (x: unknown) => {
      ran++;
      return x;
    });
    expect(() => defineFlow({ name: "run_in_body" }, (input) => void charge.run(input))).toThrow(
      new AxDefinitionError(
        'run_in_body_charge.run(...) was called in the body of flow "run_in_body", which only declares the graph and runs when the flow is defined, not per run; call run_in_body_charge(...) to add it as a node, or call run_in_body_charge.run(...) outside ax.flow(...)',
      ),
    );
    expect(ran).toBe(0);
  });

  it("names the flow when its body throws, keeping the error as the cause", () => {
    const boom = new TypeError("config.region is undefined");
    let thrown: unknown;
    try {
      defineFlow({ name: "throwing_body" }, () => {
        throw boom;
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AxDefinitionError);
    expect((thrown as Error).message).toBe(
      'the body of flow "throwing_body" threw while the flow was defined: TypeError: config.region is undefined; a flow body runs once, at import, to declare the graph: move code that can fail into a task',
    );
    expect((thrown as Error).cause).toBe(boom);
  });
});

describe("a Ref used as a value in the flow body", () => {
  it("refuses a template string, arithmetic or a comparison with AxDefinitionError naming the flow and the node", () => {
    const step = defineTask({ name: "ref_value_step" }, (text: string) => text);
    const paid = defineTask({ name: "ref_value_paid" }, () => ({ amount: 1 }));
    expect(() =>
      defineFlow({ name: "ref_in_template" }, (input: Ref<{ id: string }>) => {
        const p = paid();
        step(`order ${p}`);
        return input;
      }),
    ).toThrow(/the result of node "ref_value_paid" \(a Ref\) has no value while flow "ref_in_template" is traced.*Pass the Ref to a task/);
    expect(() =>
      defineFlow({ name: "ref_compared" }, (input: Ref<number>) => {
        if ((input as unknown as number) > 100) step("big");
        step("always");
      }),
    ).toThrow(AxDefinitionError);
  });
});

describe("the types of refs", () => {
  it("type a task's result as the downstream receives it: a Date as its ISO string", () => {
    const due = defineTask({ name: "types_due" }, () => ({ at: new Date(0), days: [new Date(0)] }));
    const remind = defineTask({ name: "types_remind" }, (d: { at: string; days: string[] }) => d.at);
    const wrong = defineTask({ name: "types_remind_wrong" }, (d: { at: Date }) => d.at.toISOString());
    const flow = defineFlow({ name: "types_dates" }, () => {
      remind(due());
      // @ts-expect-error the Date arrives as a string, so a task expecting a Date does not type-check
      wrong(due());
    });
    expect(flow.dag.nodes.map((n) => n.key)).toEqual(["types_due", "types_remind", "types_due#2", "types_remind_wrong"]);
  });
});
