ALTER TABLE "once_keys" ADD COLUMN "claimed_by" text;--> statement-breakpoint
ALTER TABLE "once_keys" ADD COLUMN "lease_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "once_keys" ADD COLUMN "completed_at" timestamp with time zone;