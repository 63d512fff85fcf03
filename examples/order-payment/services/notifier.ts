/** Stand-in for the notification service: records what would have been sent. */
export const notifier = {
  sent: [] as { user_id: string; template: string; data: Record<string, string> }[],
  async sendMessage(message: { user_id: string; template: string; data: Record<string, string> }): Promise<void> {
    this.sent.push(message);
  },
};
