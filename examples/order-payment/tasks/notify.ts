import { ax } from "ax-scheduler";
import { notifier } from "../services/notifier.js";
import type { Invoice } from "./invoice.js";
import type { Payment } from "./payment.js";

/** Tells the user their invoice is ready; a failure here alerts but never fails the order. */
export const sendNotification = ax.task(
  { name: "send_notification", timeout: 5, onFailure: "notify_only" },
  async (payment: Payment, invoice: Invoice): Promise<void> => {
    await notifier.sendMessage({
      user_id: payment.user_id,
      template: "invoice_issued",
      data: { invoice_id: invoice.invoice_id },
    });
  },
);
