// The import's work done by DuckDB, for the benchmark's comparison line: read_csv of one
// kernel_details.csv, GROUP BY the kernel signature (type, shapes, dtypes, formats) with the
// count, the mean duration and the 25 counter means, on THREADS threads. Prints the group count.
//   DUCKDB_DIR=<dir with node_modules/@duckdb/node-api> node duckdb_group.cjs CSV THREADS
const path = require("path");
const { DuckDBInstance } = require(path.join(process.env.DUCKDB_DIR, "node_modules/@duckdb/node-api"));
const METRICS = ["aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)", "aic_mac_ratio",
  "aic_scalar_time(us)", "aic_scalar_ratio", "aic_mte1_time(us)", "aic_mte1_ratio",
  "aic_mte2_time(us)", "aic_mte2_ratio", "aic_fixpipe_time(us)", "aic_fixpipe_ratio",
  "aic_icache_miss_rate", "aiv_time(us)", "aiv_total_cycles", "aiv_vec_time(us)",
  "aiv_vec_ratio", "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)",
  "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio", "aiv_icache_miss_rate",
  "cube_utilization(%)"];
const KEY = ["Type", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
  "Output Data Types", "Output Formats"].map((c) => `"${c}"`).join(", ");

(async () => {
  const [csv, threads] = process.argv.slice(2);
  const db = await DuckDBInstance.create(":memory:", { threads: String(threads || 2) });
  const con = await db.connect();
  const means = METRICS.map((m, i) => `avg(TRY_CAST("${m}" AS DOUBLE)) AS m${i}`).join(", ");
  const sql = `SELECT count(*) FROM (SELECT ${KEY}, count(*) AS n, ` +
    `avg(TRY_CAST("Duration(us)" AS DOUBLE)) AS mean, ${means} ` +
    `FROM read_csv('${csv.replace(/'/g, "''")}', header = true) GROUP BY ${KEY})`;
  const r = await con.runAndReadAll(sql);
  console.log(`duckdb groups: ${r.getRows()[0][0]}`);
})().catch((e) => { console.error(e.message); process.exit(1); });
