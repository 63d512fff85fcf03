import { describe, expect, it } from "vitest";
import { renderBusyKeys, unknownTaskProblem } from "./render-queues.js";

describe("ax queues --keys", () => {
  it("says a task name has no queue at all (a typo), rather than that none of its keys waits", () => {
    expect(unknownTaskProblem("creat_invoice", ["send_mail", "create_invoice", "send_mail"])).toBe(
      "no task is named creat_invoice; the tasks with queues are: create_invoice, send_mail",
    );
    expect(unknownTaskProblem("create_invoice", ["create_invoice"])).toBeUndefined();
    expect(renderBusyKeys("create_invoice", [])).toBe("no key of task create_invoice has runs waiting on its concurrency limit");
  });
});
