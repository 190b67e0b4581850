package goprotocol

// errorNames are Kafka's names of the error codes a client meets under faults. Every Go driver
// writes a broker's answer as "NAME: description" (harness/clients/go_program.py's classify reads the
// name), whatever words its library has for the code.
var errorNames = map[int]string{
	-1: "UNKNOWN_SERVER_ERROR", 1: "OFFSET_OUT_OF_RANGE", 2: "CORRUPT_MESSAGE", 3: "UNKNOWN_TOPIC_OR_PARTITION",
	5: "LEADER_NOT_AVAILABLE", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 10: "MESSAGE_TOO_LARGE",
	14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR",
	17: "INVALID_TOPIC_EXCEPTION", 18: "RECORD_LIST_TOO_LARGE", 19: "NOT_ENOUGH_REPLICAS",
	20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND", 22: "ILLEGAL_GENERATION", 25: "UNKNOWN_MEMBER_ID",
	27: "REBALANCE_IN_PROGRESS", 29: "TOPIC_AUTHORIZATION_FAILED", 32: "INVALID_TIMESTAMP",
	45: "OUT_OF_ORDER_SEQUENCE_NUMBER", 46: "DUPLICATE_SEQUENCE_NUMBER", 47: "INVALID_PRODUCER_EPOCH",
	48: "INVALID_TXN_STATE", 49: "INVALID_PRODUCER_ID_MAPPING", 51: "CONCURRENT_TRANSACTIONS",
	59: "UNKNOWN_PRODUCER_ID", 74: "FENCED_LEADER_EPOCH", 82: "FENCED_INSTANCE_ID", 87: "INVALID_RECORD",
	90: "PRODUCER_FENCED",
}

// BrokerError is a broker's answer as the histories keep it: "NAME: description" where Kafka's name
// for the code is known here, else the library's own words.
func BrokerError(code int, words string) string {
	if name, ok := errorNames[code]; ok {
		return name + ": " + words
	}
	return words
}
