import { ax } from "ax-scheduler";
import { createInvoice } from "../tasks/invoice.js";
import { sendNotification } from "../tasks/notify.js";
import { parsePayment, type PaymentEvent } from "../tasks/payment.js";

/** Payment succeeded -> invoice -> notify; send_notification waits for both upstreams (fan-in). */
export const orderPaymentFlow = ax.flow(
  {
    name: "order_payment_flow",
    idempotencyKey: (event: PaymentEvent) => event.payment_id,
  },
  (event) => {
    const payment = parsePayment(event);
    const invoice = createInvoice(payment);
    sendNotification(payment, invoice);
  },
);

export const flows = [orderPaymentFlow];
