#version 450
// A vertex stage with one attribute (location 0, vec4).
layout(location = 0) in vec4 position;
void main() {
    gl_Position = position;
}
