#version 450
// A fragment stage sampling set 0 binding 0 (a combined image sampler: the layout gives it an
// immutable sampler) and reading a push-constant block visible to the fragment stage.
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(push_constant) uniform Push {
    layout(offset = 16) vec4 tint;
} push;
layout(location = 0) out vec4 color;
void main() {
    color = texture(tex, vec2(0.5)) * push.tint;
}
