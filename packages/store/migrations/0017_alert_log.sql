CREATE TABLE "alert_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"sent_at" timestamp with time zone DEFAULT now() NOT NULL,
	"alert" jsonb NOT NULL,
	"deliveries" jsonb NOT NULL
);
--> statement-breakpoint
CREATE INDEX "alert_log_sent_at" ON "alert_log" USING btree ("sent_at");