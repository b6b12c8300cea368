/**
 * A child for the TestProcess tests: prints one message, writes to standard
 * error, and exits with code 3.
 */
console.log(JSON.stringify({ started: true }))
console.error("out of coffee")
process.exit(3)
