#version 450
// A vertex stage reading the first 16 bytes of push constants (a range of its own).
layout(location = 0) in vec4 position;
layout(push_constant) uniform Push {
    vec4 offset;
} push;
void main() {
    gl_Position = position + push.offset;
}
