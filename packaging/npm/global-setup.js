// globalSetup for vitest and jest: starts one Loft for the test run and exports its URL as
// LOFT_ENDPOINT and AWS_ENDPOINT_URL (which the AWS SDK for JavaScript v3 reads), with
// placeholder credentials and region when none are set. LOFT_CONFIG names a Loft TOML
// config to start with. vitest stops the server through the function returned here; jest
// through loft-server/global-teardown.
"use strict";

const fs = require("node:fs");
const { startLoft } = require("./index.js");

module.exports = async function globalSetup() {
  const config = process.env.LOFT_CONFIG ? fs.readFileSync(process.env.LOFT_CONFIG, "utf8") : undefined;
  const loft = await startLoft({ config });
  process.env.LOFT_ENDPOINT = loft.endpoint;
  process.env.AWS_ENDPOINT_URL = loft.endpoint;
  process.env.AWS_REGION = process.env.AWS_REGION || "us-east-1";
  process.env.AWS_ACCESS_KEY_ID = process.env.AWS_ACCESS_KEY_ID || "test";
  process.env.AWS_SECRET_ACCESS_KEY = process.env.AWS_SECRET_ACCESS_KEY || "test";
  globalThis.__LOFT__ = loft;
  return () => loft.stop();
};
