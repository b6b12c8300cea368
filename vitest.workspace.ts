export default ["packages/*", "examples/*", "docs"]
