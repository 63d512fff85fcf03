import { randomUUID } from "node:crypto";

/** The third-party invoice service's failure: worth retrying (the task's `retryOn` names it). */
export class InvoiceApiError extends Error {
  override name = "InvoiceApiError";
}

/**
 * Stand-in for the external e-invoice API (the only fake in the example: it is a third party).
 * `failNext(n)` makes the next n calls fail, to watch ax retry them.
 */
export const invoiceApi = {
  failures: 0,
  calls: 0,
  failNext(n: number) {
    this.failures = n;
  },
  async create(request: { user_id: string; amount: number }): Promise<string> {
    this.calls += 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.failures > 0) {
      this.failures -= 1;
      throw new InvoiceApiError(`invoice service unavailable (user ${request.user_id})`);
    }
    return `inv_${randomUUID().slice(0, 8)}`;
  },
};
