package streamjson

// ErrorCodeUnsupported is the error_code of a control_response refusing a control request
// subtype stoke does not implement (the pair the Claude Agent SDK itself uses).
const ErrorCodeUnsupported = "unsupported_request"

// Control response subtypes.
const (
	ControlSuccess = "success"
	ControlError   = "error"
)

// ControlResponseBody is the response object of a control_response line. The SDK matches it
// to its request by RequestID alone.
type ControlResponseBody struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	// Response is the payload of a success reply (an object; {} when there is nothing to say).
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
}

// ControlResponse answers a control_request read from stdin with --input-format stream-json.
type ControlResponse struct {
	Envelope
	Response ControlResponseBody `json:"response"`
}

// NewControlSuccess answers requestID with a success reply; a nil response is written as {}.
func NewControlSuccess(requestID string, response any) *ControlResponse {
	if response == nil {
		response = struct{}{}
	}
	return &ControlResponse{
		Envelope: Envelope{Type: "control_response"},
		Response: ControlResponseBody{Subtype: ControlSuccess, RequestID: requestID, Response: response},
	}
}

// NewControlError answers requestID with an error reply; code may be empty.
func NewControlError(requestID, message, code string) *ControlResponse {
	return &ControlResponse{
		Envelope: Envelope{Type: "control_response"},
		Response: ControlResponseBody{Subtype: ControlError, RequestID: requestID, Error: message, ErrorCode: code},
	}
}
