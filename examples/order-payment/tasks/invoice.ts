import { ax } from "ax-scheduler";
import { InvoiceApiError, invoiceApi } from "../services/invoice-api.js";
import type { Payment } from "./payment.js";

export interface Invoice {
  invoice_id: string;
  payment_id: string;
}

/** Calls the invoice service; only its own outages are retried. */
export const createInvoice = ax.task(
  { name: "create_invoice", retries: 3, retryOn: [InvoiceApiError] },
  async (payment: Payment): Promise<Invoice> => {
    const invoice_id = await invoiceApi.create({ user_id: payment.user_id, amount: payment.amount });
    return { invoice_id, payment_id: payment.payment_id };
  },
);
