// Starts and stops the `loft` binary this package carries (bin/loft), on a free port of
// 127.0.0.1 with a temporary SQLite database. Used by global-setup.js; usable on its own:
//
//   const { startLoft } = require("loft-server");
//   const loft = await startLoft();          // loft.endpoint: "http://127.0.0.1:PORT"
//   await loft.reset();                      // POST /_loft/reset: an empty server again
//   await loft.stop();
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const LISTENING = "loft listening on ";

/** The binary: $LOFT_BINARY when set, else the one in this package. */
function binary() {
  return process.env.LOFT_BINARY || path.join(__dirname, "bin", "loft");
}

/**
 * Starts `loft serve`. Options: `config` (text of a Loft TOML config whose resources are
 * made at start and after each reset), `args` (extra flags), `timeoutMs` (default 15000).
 * Resolves to `{ endpoint, pid, reset(), stop() }`; rejects with the process's output when
 * it does not listen in time.
 */
function startLoft(options = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loft-"));
  const args = ["serve", "--listen", "127.0.0.1:0", "--db", path.join(dir, "loft.db")];
  if (options.config) {
    const file = path.join(dir, "loft.toml");
    fs.writeFileSync(file, options.config);
    args.push("--config", file);
  }
  args.push(...(options.args || []));
  const child = spawn(binary(), args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      cleanup();
      reject(new Error(`loft did not start:\n${output}`));
    }, options.timeoutMs || 15000);
    child.on("error", (err) => {
      clearTimeout(timer);
      cleanup();
      reject(err);
    });
    child.stderr.on("data", (d) => {
      output += d;
    });
    child.stdout.on("data", (d) => {
      output += d;
      const line = output.split("\n").find((l) => l.startsWith(LISTENING));
      if (!line) return;
      clearTimeout(timer);
      child.stdout.removeAllListeners("data");
      child.stdout.resume();
      const endpoint = line.slice(LISTENING.length).trim();
      resolve({
        endpoint,
        pid: child.pid,
        async reset() {
          const res = await fetch(`${endpoint}/_loft/reset`, { method: "POST" });
          if (!res.ok) throw new Error(`reset: HTTP ${res.status}`);
          return res.json();
        },
        stop() {
          return new Promise((done) => {
            if (child.exitCode !== null) {
              cleanup();
              return done();
            }
            const kill = setTimeout(() => child.kill("SIGKILL"), 5000);
            child.once("exit", () => {
              clearTimeout(kill);
              cleanup();
              done();
            });
            child.kill("SIGTERM");
          });
        },
      });
    });
  });
}

module.exports = { startLoft, binary };
