import { describe, expect, it } from "vitest";
import { renderBusyKeys, unknownTaskNote } from "./render-queues.js";

describe("ax queues --keys", () => {
  it("says a task name has no queue at all (a typo), rather than that none of its keys waits", () => {
    expect(unknownTaskNote("creat_invoice", ["send_mail", "create_invoice", "send_mail"])).toBe(
      "note: no queue of a task named creat_invoice has work or a live worker now; if the name is misspelt, the tasks with queues now are: create_invoice, send_mail",
    );
    expect(unknownTaskNote("create_invoice", ["create_invoice"])).toBeUndefined();
    expect(renderBusyKeys("create_invoice", [])).toBe("no key of task create_invoice has runs waiting on its concurrency limit");
  });
});
