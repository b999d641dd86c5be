-- A UI token made by signing in names the browser it was made for
-- (issue 32), in ferry's own words from the sign-in's User-Agent: "Chrome
-- on Android". '' for every other token and for those from before.
ALTER TABLE tokens ADD COLUMN device TEXT NOT NULL DEFAULT '';
