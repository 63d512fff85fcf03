ALTER TABLE "runs_archive" ADD COLUMN "rerun_root" uuid;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "rerun_root" uuid;--> statement-breakpoint
-- Reruns written before this column: their chain's first run as it stands, walked the way their keys were read.
WITH RECURSIVE "chain" ("run_id", "id", "rerun_of") AS (
  SELECT r."id", r."rerun_of", (SELECT p."rerun_of" FROM "runs" p WHERE p."id" = r."rerun_of") FROM "runs" r WHERE r."rerun_of" IS NOT NULL
  UNION ALL
  SELECT c."run_id", c."rerun_of", (SELECT p."rerun_of" FROM "runs" p WHERE p."id" = c."rerun_of") FROM "chain" c WHERE c."rerun_of" IS NOT NULL
)
UPDATE "runs" r SET "rerun_root" = c."id" FROM "chain" c WHERE c."run_id" = r."id" AND c."rerun_of" IS NULL;
