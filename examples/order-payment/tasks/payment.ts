import { ax } from "ax-scheduler";

export interface PaymentEvent {
  payment_id: string;
  user_id: string;
  amount: number;
}

export interface Payment extends PaymentEvent {
  parsed: true;
}

/** Turns the raw "payment succeeded" event into one shape the rest of the flow relies on. */
export const parsePayment = ax.task(
  { name: "parse_payment", retries: 2, retryBackoff: 3, timeout: 10 },
  async (payload: PaymentEvent): Promise<Payment> => ({
    payment_id: payload.payment_id,
    user_id: payload.user_id,
    amount: payload.amount,
    parsed: true,
  }),
);
