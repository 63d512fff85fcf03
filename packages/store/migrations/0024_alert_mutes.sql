CREATE TABLE "alert_mutes" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"alert_group" text NOT NULL,
	"flow" text,
	"task" text,
	"until" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_by" text NOT NULL,
	"reason" text
);
--> statement-breakpoint
CREATE INDEX "alert_mutes_group_until" ON "alert_mutes" USING btree ("alert_group","until");