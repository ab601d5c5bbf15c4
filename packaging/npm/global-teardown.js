// globalTeardown for jest: stops the Loft that loft-server/global-setup started.
"use strict";

module.exports = async function globalTeardown() {
  if (globalThis.__LOFT__) await globalThis.__LOFT__.stop();
};
