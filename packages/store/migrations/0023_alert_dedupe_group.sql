-- Silence windows become per alert group. A window kept before this has no group: it is dropped, so at most one alert per key repeats after the upgrade.
DELETE FROM "alert_dedupe";--> statement-breakpoint
ALTER TABLE "alert_dedupe" ADD COLUMN "alert_group" text NOT NULL;--> statement-breakpoint
ALTER TABLE "alert_dedupe" DROP CONSTRAINT "alert_dedupe_kind_flow_task_fingerprint_pk";--> statement-breakpoint
ALTER TABLE "alert_dedupe" ADD CONSTRAINT "alert_dedupe_alert_group_kind_flow_task_fingerprint_pk" PRIMARY KEY("alert_group","kind","flow","task","fingerprint");
