export default {
  test: {
    globalSetup: ["loft-server/global-setup"],
    testTimeout: 20000,
    fileParallelism: false,
  },
};
