export default ["packages/*", "docs"]
