#version 450
// A fragment stage whose colour comes from specialization constant 0 (a float).
layout(constant_id = 0) const float RED = 1.0;
layout(location = 0) out vec4 color;
void main() {
    color = vec4(RED, 0.0, 0.0, 1.0);
}
